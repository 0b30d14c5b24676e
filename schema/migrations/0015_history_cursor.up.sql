-- Where the lock history's watch of etcd got to: every lease end at or
-- before this revision of the etcd cluster named by identity is in
-- fencegw.lock_history (or was dropped, and counted, by a full queue). A
-- replica that starts watching resumes after it, so the ends that came
-- while no gateway watched (all of them down, a restart) are recorded
-- too, as long as etcd keeps the revisions (compaction). Every replica
-- moves it forward in the transaction that records its ends; it never
-- goes back for one cluster.
CREATE TABLE fencegw.history_cursor (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    identity  text    NOT NULL,
    revision  bigint  NOT NULL CHECK (revision > 0)
);
