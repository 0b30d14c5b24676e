package fence

import "time"

// SetSpillAfter changes how long s's line waits for its transactions in
// flight before another starts beside them (see spillAfter).
func SetSpillAfter(s *Store, d time.Duration) {
	s.coal.com.mu.Lock()
	defer s.coal.com.mu.Unlock()
	s.coal.com.spillAfter = d
}
