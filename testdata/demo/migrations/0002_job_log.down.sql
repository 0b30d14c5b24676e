DROP TABLE IF EXISTS demo.job_log;
