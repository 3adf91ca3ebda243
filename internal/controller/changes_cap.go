package controller

import "github.com/sluice-broker/sluice/internal/metadata"

// changesCap sizes the slice of ChangePartition records leaveBroker or
// returnBroker build: the partitions that may change (want), plus one for
// the fence or unfence record the caller puts first (slices.Insert then
// moves the records in place). With 100,000 partitions, growing the slice
// of large records and copying it into the caller's cost half a second of
// a restart's unfencing.
func changesCap(im *metadata.Image, want func(p *metadata.Partition) bool) int {
	n := 1
	for _, t := range im.Topics {
		for i := range t.Partitions {
			if want(&t.Partitions[i]) {
				n++
			}
		}
	}
	return n
}
