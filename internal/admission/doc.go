// Package admission is a gate that bounds how much work is in flight at
// once and shares its turns fairly between clients: the HTTP gateway's
// writes and the SQL front's transactions each pass one. It imports
// nothing of fencegw.
//
// A turn given back goes to a waiter of the client that holds the fewest,
// the oldest of that client's first. A client alone may take every turn;
// once another waits, it gets the next turn given back, however many the
// first has waiting. So one client's flood slows that client, not the
// others. A waiter that gives up, or waits longer than the gate's wait,
// is refused without a turn.
package admission
