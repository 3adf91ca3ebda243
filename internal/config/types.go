package config

// Type is a config's data type, as Kafka's ConfigDef names it.
type Type int

// Config types. Their order is irrelevant; Kmsg maps them to the wire values.
const (
	Boolean Type = iota + 1
	String
	Int
	Short
	Long
	Double
	List
	Class
	Password
)

// String returns Kafka's upper-case name for the type ("BOOLEAN", "STRING", ...).
func (t Type) String() string {
	switch t {
	case Boolean:
		return "BOOLEAN"
	case String:
		return "STRING"
	case Int:
		return "INT"
	case Short:
		return "SHORT"
	case Long:
		return "LONG"
	case Double:
		return "DOUBLE"
	case List:
		return "LIST"
	case Class:
		return "CLASS"
	case Password:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// Kmsg returns the DescribeConfigs (v3+) config_type wire value for t, equal
// to the corresponding kmsg.ConfigType constant.
func (t Type) Kmsg() int8 {
	switch t {
	case Boolean:
		return 1
	case String:
		return 2
	case Int:
		return 3
	case Short:
		return 4
	case Long:
		return 5
	case Double:
		return 6
	case List:
		return 7
	case Class:
		return 8
	case Password:
		return 9
	}
	return 0
}

// Def describes one config: the single source of truth for its name, type,
// default, validation and documentation.
type Def struct {
	Name    string
	Type    Type
	Default *string // nil = no default (Kafka "null")
	Doc     string
	// Validate parses and range-checks a value. It is nil-safe to call
	// through Def.Check; the error message says what is allowed.
	Validate func(v string) error
	// Synonyms are the broker-level names a topic config falls back to, in
	// Kafka's precedence order (topic defs only).
	Synonyms []string
	// ReadOnly marks broker configs that cannot change at runtime.
	ReadOnly  bool
	Sensitive bool
	// Effect is "" if Sluice honours the config; otherwise a short note such
	// as "accepted, no effect (single node)".
	Effect string
	// Valid describes the accepted values, for documentation ("" = any).
	Valid string

	rule rule // source of Validate and Valid for table entries
}

// Check validates v against d, returning a *ConfigError naming the config on
// failure. A Def without a validator accepts anything.
func (d Def) Check(v string) error {
	if d.Validate == nil {
		return nil
	}
	if err := d.Validate(v); err != nil {
		return &ConfigError{Name: d.Name, Value: v, Msg: err.Error()}
	}
	return nil
}
