package quota

// Tags name the sensor a client's usage is measured by, as Kafka's quota
// metric tags do: clients whose quota comes from the same entity share it.
// An empty field is not part of the sensor's identity.
type Tags struct {
	User     string
	ClientID string
}

// Resolve returns the quota of key applying to a client (user is the
// principal's name, ANONYMOUS without authentication), found at the first
// of Apache Kafka's eight levels that sets it:
//
//  1. user=U, client-id=C
//  2. user=U, client-id=<default>
//  3. user=U
//  4. user=<default>, client-id=C
//  5. user=<default>, client-id=<default>
//  6. user=<default>
//  7. client-id=C
//  8. client-id=<default>
//
// The tags say which clients share the quota: a quota set for a user
// (levels 3 and 6) is shared by every client id of that user, one for a
// client id (levels 7 and 8) by every user of that client id, and one for a
// pair (levels 1, 2, 4 and 5) by the pair. ok is false when no level sets
// key: the client is not limited.
func (q Quotas) Resolve(key, user, clientID string) (limit float64, tags Tags, ok bool) {
	if len(q) == 0 {
		return 0, Tags{}, false
	}
	u, c := Named(user), Named(clientID)
	pair := Tags{User: user, ClientID: clientID}
	levels := []struct {
		e    Entity
		tags Tags
	}{
		{Entity{User: u, ClientID: c}, pair},
		{Entity{User: u, ClientID: DefaultPart()}, pair},
		{Entity{User: u}, Tags{User: user}},
		{Entity{User: DefaultPart(), ClientID: c}, pair},
		{Entity{User: DefaultPart(), ClientID: DefaultPart()}, pair},
		{Entity{User: DefaultPart()}, Tags{User: user}},
		{Entity{ClientID: c}, Tags{ClientID: clientID}},
		{Entity{ClientID: DefaultPart()}, Tags{ClientID: clientID}},
	}
	for _, l := range levels {
		if l.e.User.Set && !l.e.User.Default && user == "" {
			continue
		}
		if v, found := q[l.e.Key()][key]; found {
			return v, l.tags, true
		}
	}
	return 0, Tags{}, false
}

// ResolveIP returns the connection_creation_rate of an ip address: its own
// quota, else the ip default.
func (q Quotas) ResolveIP(ip string) (float64, bool) {
	if v, ok := q[Entity{IP: Named(ip)}.Key()][ConnectionCreationRate]; ok {
		return v, true
	}
	v, ok := q[Entity{IP: DefaultPart()}.Key()][ConnectionCreationRate]
	return v, ok
}

// Index is Quotas prepared for lookups on the request path: per quota key,
// the user/client-id entities as small comparable keys, so that resolving
// allocates nothing and hashes little. Build one per Quotas (they never
// change once shared).
type Index struct {
	byKey map[string]map[ucKey]float64
	ips   map[Part]float64 // connection_creation_rate by ip entity
}

// ucKey is a user/client-id entity: names and which parts are set or
// defaults.
type ucKey struct {
	user, client string
	shape        uint8
}

const (
	hasUser = 1 << iota
	userDefault
	hasClient
	clientDefault
)

func ucOf(e Entity) ucKey {
	var k ucKey
	if e.User.Set {
		k.shape |= hasUser
		if e.User.Default {
			k.shape |= userDefault
		} else {
			k.user = e.User.Name
		}
	}
	if e.ClientID.Set {
		k.shape |= hasClient
		if e.ClientID.Default {
			k.shape |= clientDefault
		} else {
			k.client = e.ClientID.Name
		}
	}
	return k
}

// NewIndex indexes q; entity keys that do not parse are left out.
func NewIndex(q Quotas) *Index {
	ix := &Index{byKey: map[string]map[ucKey]float64{}, ips: map[Part]float64{}}
	for k, vals := range q {
		e, err := ParseKey(k)
		if err != nil {
			continue
		}
		if e.IP.Set {
			if v, ok := vals[ConnectionCreationRate]; ok {
				ix.ips[e.IP] = v
			}
			continue
		}
		for key, v := range vals {
			m := ix.byKey[key]
			if m == nil {
				m = map[ucKey]float64{}
				ix.byKey[key] = m
			}
			m[ucOf(e)] = v
		}
	}
	return ix
}

// Empty reports whether no quota is set.
func (ix *Index) Empty() bool { return ix == nil || len(ix.byKey) == 0 && len(ix.ips) == 0 }

// Resolve is Quotas.Resolve on the index.
func (ix *Index) Resolve(key, user, clientID string) (limit float64, tags Tags, ok bool) {
	if ix == nil {
		return 0, Tags{}, false
	}
	m := ix.byKey[key]
	if len(m) == 0 {
		return 0, Tags{}, false
	}
	pair := Tags{User: user, ClientID: clientID}
	try := func(k ucKey) bool {
		limit, ok = m[k]
		return ok
	}
	switch {
	case try(ucKey{user, clientID, hasUser | hasClient}), try(ucKey{user, "", hasUser | hasClient | clientDefault}):
		return limit, pair, true
	case try(ucKey{user, "", hasUser}):
		return limit, Tags{User: user}, true
	case try(ucKey{"", clientID, hasUser | userDefault | hasClient}), try(ucKey{"", "", hasUser | userDefault | hasClient | clientDefault}):
		return limit, pair, true
	case try(ucKey{"", "", hasUser | userDefault}):
		return limit, Tags{User: user}, true
	case try(ucKey{"", clientID, hasClient}), try(ucKey{"", "", hasClient | clientDefault}):
		return limit, Tags{ClientID: clientID}, true
	}
	return 0, Tags{}, false
}

// ResolveIP is Quotas.ResolveIP on the index.
func (ix *Index) ResolveIP(ip string) (float64, bool) {
	if ix == nil || len(ix.ips) == 0 {
		return 0, false
	}
	if v, ok := ix.ips[Named(ip)]; ok {
		return v, true
	}
	v, ok := ix.ips[DefaultPart()]
	return v, ok
}
