package broker

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkMetadataOps measures the metadata operations of docs/cluster.md
// ("Towards a one-voter quorum by default") on a single node and on an
// implicit one-voter quorum: one CreateTopics of 1,000 topics (1 partition
// each), 200 single-topic CreateTopics one after the other, and one
// DeleteTopics of the 1,000. Run with
//
//	go test ./internal/broker/ -run '^$' -bench BenchmarkMetadataOps -benchtime 1x
func BenchmarkMetadataOps(b *testing.B) {
	for _, mode := range []string{"single", "one-voter"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				tb := startTestBroker(b, testOptions{Quiet: true,
					Props: map[string]string{oneVoterQuorumConfig: fmt.Sprint(mode == "one-voter")}})
				adm := tb.admin()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				names := make([]string, 1000)
				for i := range names {
					names[i] = fmt.Sprintf("bench-%04d", i)
				}
				b.StartTimer()
				t0 := time.Now()
				if rs, err := adm.CreateTopics(ctx, 1, 1, nil, names...); err != nil || rs.Error() != nil {
					b.Fatalf("create 1,000: %v %v", err, rs.Error())
				}
				create := time.Since(t0)
				t0 = time.Now()
				for i := range 200 {
					if r, err := adm.CreateTopic(ctx, 1, 1, nil, fmt.Sprintf("one-%03d", i)); err != nil || r.Err != nil {
						b.Fatalf("create one: %v %v", err, r.Err)
					}
				}
				one := time.Since(t0) / 200
				t0 = time.Now()
				if rs, err := adm.DeleteTopics(ctx, names...); err != nil || rs.Error() != nil {
					b.Fatalf("delete 1,000: %v %v", err, rs.Error())
				}
				del := time.Since(t0)
				b.StopTimer()
				b.ReportMetric(create.Seconds(), "create1000-s")
				b.ReportMetric(float64(one.Microseconds())/1000, "create1-ms")
				b.ReportMetric(del.Seconds(), "delete1000-s")
				cancel()
				tb.srv.Close()
				b.StartTimer()
			}
		})
	}
}
