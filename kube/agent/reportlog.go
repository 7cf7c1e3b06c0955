package agent

import (
	"cmp"
	"slices"
	"strings"
)

// report is one thing the agent logs once, when it appears: a part of a
// Service not served as asked, or an annotation not applied.
type report struct {
	service, reason string
	annotation      bool
}

// reportLog holds the agent's own reports (beside the converter's) by
// what they are about, so that a sync that converts some Services again
// replaces theirs alone.
type reportLog struct {
	buckets map[string][]report
	count   map[report]int
}

func newReportLog() *reportLog {
	return &reportLog{buckets: map[string][]report{}, count: map[report]int{}}
}

// set replaces the reports of bucket with rs and returns those that are
// new.
func (l *reportLog) set(bucket string, rs []report) []report {
	for _, r := range l.buckets[bucket] {
		if l.count[r]--; l.count[r] <= 0 {
			delete(l.count, r)
		}
	}
	var news []report
	for _, r := range rs {
		if l.count[r] == 0 {
			news = append(news, r)
		}
		l.count[r]++
	}
	if len(rs) == 0 {
		delete(l.buckets, bucket)
	} else {
		l.buckets[bucket] = rs
	}
	return news
}

// logReports logs each report of rs once, in order.
func (a *Agent) logReports(rs []report) {
	slices.SortFunc(rs, func(x, y report) int {
		return cmp.Or(cmp.Compare(x.service, y.service), cmp.Compare(x.reason, y.reason))
	})
	for _, r := range slices.Compact(rs) {
		if r.annotation {
			a.log.Warn("annotation not applied", "err", strings.TrimSpace(r.reason))
		} else {
			a.log.Warn("not served as asked", "service", r.service, "reason", r.reason)
		}
	}
}
