DROP TABLE fencegw.replicas;
