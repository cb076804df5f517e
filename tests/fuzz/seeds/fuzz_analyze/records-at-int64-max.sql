-- Seed of fuzz_analyze, applied to the newest tests/fixtures/store/schema_v*.sql by scripts/fuzz:
-- the run and its processes as recorded, every record in them at INT64_MAX.
UPDATE proc_samples SET t_ns = 9223372036854775807;
UPDATE host_samples SET t_ns = 9223372036854775807;
UPDATE step_samples SET t_ns = 9223372036854775807;
UPDATE events SET t_ns = 9223372036854775807;
UPDATE log_lines SET t_ns = 9223372036854775807;
UPDATE log_writers SET t_ns = 9223372036854775807;
UPDATE crashes SET time_ns = 9223372036854775807;
UPDATE gpu_samples SET t_ns = 9223372036854775807;
UPDATE gpu_process_samples SET t_ns = 9223372036854775807;
UPDATE gpu_processes SET first_seen_ns = 9223372036854775807;
UPDATE gpu_events SET t_ns = 9223372036854775807;
UPDATE collectives SET t_ns = 9223372036854775807, end_ns = 9223372036854775807;
UPDATE collective_issues SET t_ns = 9223372036854775807, first_ns = 9223372036854775807;
