package security

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// Encrypted PKCS#8 private keys ("ENCRYPTED PRIVATE KEY" PEM blocks, RFC
// 5958 / RFC 8018), as Kafka's PEM key stores accept with ssl.key.password:
// PBES2 with PBKDF2 (HMAC-SHA-1/224/256/384/512) and AES-CBC, which is what
// `openssl pkcs8 -topk8 -v2 aes-256-cbc` (and OpenSSL's default) writes.

var (
	oidPBES2         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACWithSHA1  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACWithSHA2x = map[string]func() hash.Hash{
		"1.2.840.113549.2.8":  sha256.New224,
		"1.2.840.113549.2.9":  sha256.New,
		"1.2.840.113549.2.10": sha512.New384,
		"1.2.840.113549.2.11": sha512.New,
	}
	aesCBCKeySizes = map[string]int{
		"2.16.840.1.101.3.4.1.2":  16,
		"2.16.840.1.101.3.4.1.22": 24,
		"2.16.840.1.101.3.4.1.42": 32,
	}
)

type encryptedPrivateKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

type pbes2Params struct {
	KDF        pkix.AlgorithmIdentifier
	Encryption pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// errBadKeyPassword is returned when an encrypted key does not decrypt.
var errBadKeyPassword = errors.New("the private key does not decrypt with ssl.key.password (wrong password?)")

// decryptPKCS8 decrypts an encrypted PKCS#8 key and parses it.
func decryptPKCS8(der []byte, password string) (any, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("malformed encrypted private key")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted private key uses %v; only PBES2 (PBKDF2 + AES-CBC) is supported "+
			"(re-encrypt with: openssl pkcs8 -topk8 -v2 aes-256-cbc)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, errors.New("malformed PBES2 parameters")
	}
	if !params.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("encrypted private key: key derivation %v is not supported (PBKDF2 only)", params.KDF.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, errors.New("malformed PBKDF2 parameters")
	}
	prf := sha1.New
	if len(kdf.PRF.Algorithm) > 0 && !kdf.PRF.Algorithm.Equal(oidHMACWithSHA1) {
		h, ok := oidHMACWithSHA2x[kdf.PRF.Algorithm.String()]
		if !ok {
			return nil, fmt.Errorf("encrypted private key: PBKDF2 PRF %v is not supported", kdf.PRF.Algorithm)
		}
		prf = h
	}
	keyLen, ok := aesCBCKeySizes[params.Encryption.Algorithm.String()]
	if !ok {
		return nil, fmt.Errorf("encrypted private key: cipher %v is not supported (AES-CBC only)", params.Encryption.Algorithm)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.Encryption.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("malformed AES-CBC parameters")
	}
	if kdf.Iterations <= 0 || kdf.Iterations > 10_000_000 {
		return nil, fmt.Errorf("encrypted private key: PBKDF2 iteration count %d out of range", kdf.Iterations)
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, err
	}
	if len(info.Data) == 0 || len(info.Data)%aes.BlockSize != 0 {
		return nil, errors.New("malformed encrypted private key data")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	plain := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, info.Data)
	pad := int(plain[len(plain)-1])
	if pad == 0 || pad > aes.BlockSize || pad > len(plain) {
		return nil, errBadKeyPassword
	}
	for _, b := range plain[len(plain)-pad:] {
		if int(b) != pad {
			return nil, errBadKeyPassword
		}
	}
	k, err := x509.ParsePKCS8PrivateKey(plain[:len(plain)-pad])
	if err != nil {
		return nil, errBadKeyPassword
	}
	return k, nil
}
