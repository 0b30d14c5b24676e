-- The identity fencegw gives an etcd cluster's data (a random name written
-- once under /fencegw/identity), recorded per epoch. etcd derives its
-- cluster ID from its flags, so a cluster rebuilt with a wiped data
-- directory keeps it; it does not keep this, and gateways halt on it even
-- when its revision is already past the one recorded here.
ALTER TABLE fencegw.authority ADD COLUMN identity text;
