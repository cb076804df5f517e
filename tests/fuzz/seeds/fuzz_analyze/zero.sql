-- Seed of fuzz_analyze, applied to the newest tests/fixtures/store/schema_v*.sql by scripts/fuzz:
-- every time 0 (the clock's origin, and "not yet" for ends).
UPDATE run SET start_ns = 0, end_ns = 0;
UPDATE processes SET start_ns = 0, end_ns = 0;
UPDATE proc_samples SET t_ns = 0;
UPDATE host_samples SET t_ns = 0;
UPDATE step_samples SET t_ns = 0;
UPDATE events SET t_ns = 0;
UPDATE log_lines SET t_ns = 0;
UPDATE log_writers SET t_ns = 0;
UPDATE crashes SET time_ns = 0;
UPDATE gpu_samples SET t_ns = 0;
UPDATE gpu_process_samples SET t_ns = 0;
UPDATE gpu_processes SET first_seen_ns = 0;
UPDATE gpu_events SET t_ns = 0;
UPDATE collectives SET t_ns = 0, end_ns = 0;
UPDATE collective_issues SET t_ns = 0, first_ns = 0;
INSERT OR REPLACE INTO meta VALUES('samples_thinned_until_ns', '0');
