// Package batch owns the Kafka v2 RecordBatch format: a zero-copy view of the
// 61-byte batch header, in-place header rewrites (base offset, leader epoch,
// LogAppendTime), CRC-32C, splitting a produce payload into batches, full
// validation as a broker must do before storing a batch, record decoding and
// iteration, the compression codecs (gzip, snappy raw and xerial framing, lz4
// frame, zstd) with hard output bounds, and a Builder for new batches.
//
// It works on byte slices only. It must not touch files, the network, topic
// configuration or any broker state: callers (log, broker, cleaner, group
// coordinator) decide what to do with the results. Bad input always yields an
// *Error carrying a Kafka error code, never a panic.
package batch
