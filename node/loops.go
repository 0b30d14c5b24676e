package node

import (
	"context"
	"sync"
)

// RunLoops runs each loop (the Node's Run… methods, or others) in its own
// goroutine until the returned stop function is called, which waits for
// all of them to return. The loops' context is ctx's values without its
// cancellation: they stop when stop says, not when ctx ends, so that a
// server stops them after it stopped answering.
func RunLoops(ctx context.Context, loops ...func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, loop := range loops {
		wg.Go(func() { loop(ctx) })
	}
	return func() { cancel(); wg.Wait() }
}
