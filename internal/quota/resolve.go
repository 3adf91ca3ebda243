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
