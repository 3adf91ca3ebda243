package authz

import (
	"fmt"
	"strings"
)

// ResourceType is Kafka's resource type code (the wire value).
type ResourceType int8

// Kafka's resource type codes.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// ClusterName is the only name of the CLUSTER resource.
const ClusterName = "kafka-cluster"

// Wildcard is the wildcard resource name and host ("*").
const Wildcard = "*"

// WildcardPrincipal matches every User principal.
const WildcardPrincipal = "User:*"

func (t ResourceType) String() string {
	switch t {
	case ResourceAny:
		return "ANY"
	case ResourceTopic:
		return "TOPIC"
	case ResourceGroup:
		return "GROUP"
	case ResourceCluster:
		return "CLUSTER"
	case ResourceTransactionalID:
		return "TRANSACTIONAL_ID"
	case ResourceDelegationToken:
		return "DELEGATION_TOKEN"
	case ResourceUser:
		return "USER"
	}
	return "UNKNOWN"
}

// PatternType is Kafka's resource pattern type code.
type PatternType int8

// Kafka's pattern type codes. ANY and MATCH appear in filters only.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

func (p PatternType) String() string {
	switch p {
	case PatternAny:
		return "ANY"
	case PatternMatch:
		return "MATCH"
	case PatternLiteral:
		return "LITERAL"
	case PatternPrefixed:
		return "PREFIXED"
	}
	return "UNKNOWN"
}

// Operation is Kafka's ACL operation code.
type Operation int8

// Kafka's operation codes.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

var opNames = map[Operation]string{
	OpAny: "ANY", OpAll: "ALL", OpRead: "READ", OpWrite: "WRITE", OpCreate: "CREATE", OpDelete: "DELETE",
	OpAlter: "ALTER", OpDescribe: "DESCRIBE", OpClusterAction: "CLUSTER_ACTION", OpDescribeConfigs: "DESCRIBE_CONFIGS",
	OpAlterConfigs: "ALTER_CONFIGS", OpIdempotentWrite: "IDEMPOTENT_WRITE", OpCreateTokens: "CREATE_TOKENS",
	OpDescribeTokens: "DESCRIBE_TOKENS",
}

func (o Operation) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return "UNKNOWN"
}

// SupportedOps are the operations Kafka reports in the authorized-operations
// fields of each resource type (Metadata, DescribeGroups, DescribeCluster).
var SupportedOps = map[ResourceType][]Operation{
	ResourceTopic:   {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:   {OpRead, OpDescribe, OpDelete},
	ResourceCluster: {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
}

// Permission is Kafka's permission type code.
type Permission int8

// Kafka's permission type codes.
const (
	PermUnknown Permission = 0
	PermAny     Permission = 1
	PermDeny    Permission = 2
	PermAllow   Permission = 3
)

func (p Permission) String() string {
	switch p {
	case PermAny:
		return "ANY"
	case PermDeny:
		return "DENY"
	case PermAllow:
		return "ALLOW"
	}
	return "UNKNOWN"
}

// Binding is one ACL: a resource pattern and an access control entry.
type Binding struct {
	ResourceType ResourceType `json:"resource_type"`
	ResourceName string       `json:"resource_name"`
	PatternType  PatternType  `json:"pattern_type"`
	Principal    string       `json:"principal"`
	Host         string       `json:"host"`
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

func (b Binding) String() string {
	return fmt.Sprintf("(resource=%s:%s:%s, principal=%s, host=%s, operation=%s, permission=%s)",
		b.ResourceType, b.PatternType, b.ResourceName, b.Principal, b.Host, b.Operation, b.Permission)
}

// InvalidError is a binding or filter Kafka rejects with INVALID_REQUEST.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalid(format string, a ...any) error { return &InvalidError{Msg: fmt.Sprintf(format, a...)} }

// Validate checks a binding before it is created, with Kafka's messages
// (INVALID_REQUEST). DELEGATION_TOKEN resources are refused: Sluice has no
// delegation tokens.
func (b Binding) Validate() error {
	switch b.ResourceType {
	case ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID, ResourceUser:
	case ResourceDelegationToken:
		return invalid("Sluice does not support delegation tokens: ACLs on DELEGATION_TOKEN resources are refused")
	default:
		return invalid("Invalid resourceType %s", b.ResourceType)
	}
	if b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed {
		return invalid("Invalid patternType %s", b.PatternType)
	}
	if o := b.Operation; o < OpAll || o > OpDescribeTokens {
		return invalid("Invalid operation %s", o)
	}
	if b.Permission != PermAllow && b.Permission != PermDeny {
		return invalid("Invalid permissionType %s", b.Permission)
	}
	if b.ResourceType == ResourceCluster && b.ResourceName != ClusterName {
		return invalid("The only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if b.ResourceName == "" {
		return invalid("Invalid empty resource name")
	}
	if !strings.Contains(b.Principal, ":") {
		return invalid("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", b.Principal)
	}
	if b.Host == "" {
		return invalid("Invalid empty host: use * for every host")
	}
	return nil
}

// Filter selects bindings (DescribeAcls, DeleteAcls). Nil strings match any
// value; ResourceAny, PatternAny, OpAny and PermAny match any code.
// PatternMatch selects the bindings that would apply to the resource
// ResourceName: LITERAL bindings of that name or of "*", PREFIXED bindings
// whose prefix it starts with.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Validate rejects filters with unknown codes (INVALID_REQUEST).
func (f Filter) Validate() error {
	if f.ResourceType <= ResourceUnknown || f.ResourceType > ResourceUser {
		return invalid("Unknown patternFilter: resource type %d", int8(f.ResourceType))
	}
	if f.PatternType <= PatternUnknown || f.PatternType > PatternPrefixed {
		return invalid("Unknown patternFilter: pattern type %d", int8(f.PatternType))
	}
	if f.Operation <= OpUnknown || f.Operation > OpDescribeTokens {
		return invalid("Unknown entryFilter: operation %d", int8(f.Operation))
	}
	if f.Permission <= PermUnknown || f.Permission > PermAllow {
		return invalid("Unknown entryFilter: permission type %d", int8(f.Permission))
	}
	return nil
}

// Matches reports whether the filter selects b (Kafka's AclBindingFilter).
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		if f.PatternType == PatternMatch {
			switch b.PatternType {
			case PatternLiteral:
				if name != b.ResourceName && b.ResourceName != Wildcard {
					return false
				}
			case PatternPrefixed:
				if !strings.HasPrefix(name, b.ResourceName) {
					return false
				}
			default:
				return false
			}
		} else if name != b.ResourceName {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	if f.Permission != PermAny && f.Permission != b.Permission {
		return false
	}
	return true
}
