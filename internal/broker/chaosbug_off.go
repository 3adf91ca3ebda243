//go:build !chaosbug_ackearly

package broker

// chaosBugAckEarly is false in every real build: see chaosbug_ackearly.go.
const chaosBugAckEarly = false
