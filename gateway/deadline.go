package gateway

import (
	"fmt"
	"net/http"
	"time"

	"github.com/fencegw/fencegw/internal/clip"
)

// NotAfterHeader carries a write's business deadline, an RFC 3339 time:
// the write (or batch) applies only if PostgreSQL's clock has not passed
// it when the write's fences are advanced (fence.Request.NotAfter). The
// gateway's clock decides nothing but the bound on how far ahead it may be.
const NotAfterHeader = "Fencing-Not-After"

// maxDeadlineAhead bounds a deadline: one further off is a mistake (a
// year typed for a day), not a business window.
const maxDeadlineAhead = 366 * 24 * time.Hour

// notAfter reads the optional Fencing-Not-After header. A deadline already
// past is not refused here: the database's clock is the one that decides,
// and refuses it (409 deadline-passed) with nothing written.
func notAfter(r *http.Request) (time.Time, error) {
	values := r.Header.Values(NotAfterHeader)
	switch len(values) {
	case 0:
		return time.Time{}, nil
	case 1:
	default:
		return time.Time{}, badRequest("%d %s headers: send exactly one", len(values), NotAfterHeader)
	}
	t, err := time.Parse(time.RFC3339Nano, values[0])
	if err != nil {
		return time.Time{}, badRequest("%s %q: want an RFC 3339 time, e.g. 2026-12-01T17:00:00Z", NotAfterHeader, clip.String(values[0], 64))
	}
	if ahead := time.Until(t); ahead > maxDeadlineAhead {
		return time.Time{}, badRequest("%s %s is %s ahead: a deadline is at most a year away", NotAfterHeader, t.UTC().Format(time.RFC3339), ahead.Round(time.Hour))
	}
	return t, nil
}

// deadlineDetail words a deadline refusal for a client.
func deadlineDetail(notAfter time.Time, at string) string {
	return fmt.Sprintf("the write's deadline %s had passed when it reached PostgreSQL (%s by the database's clock); nothing was written",
		notAfter.UTC().Format(time.RFC3339Nano), at)
}
