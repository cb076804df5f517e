#!/usr/bin/env bash
# The SQL that moves a run.db's times to int64's limits, applied by scripts/fuzz to the newest
# tests/fixtures/store/schema_v*.sql to make fuzz_analyze's seeds (docs/fuzzing.md).
#   tests/fuzz/time_seeds.sh          the names of the seeds
#   tests/fuzz/time_seeds.sh NAME     the SQL of one
set -euo pipefail
min=-9223372036854775808
max=9223372036854775807
either="(CASE WHEN rowid % 2 = 0 THEN $max ELSE $min END)"
mixed="(CASE rowid % 3 WHEN 0 THEN $min WHEN 1 THEN $max ELSE 1700000020000000000 END)"
# Name, then the starts (of the run, its processes and collectives), their ends, and every other
# time in the run; "-" leaves the run and its processes as recorded.
declare -A seeds=(
  [int64-min]="$min $min $min"
  [zero]="0 0 0"
  [end-before-start]="$max $min $either"
  [records-at-int64-min]="- - $min"
  [records-at-int64-max]="- - $max"
  [int64-max]="$max $max $max"
  [min-to-max]="$min $max $mixed"
)
case "${1:-}" in
  "") printf '%s\n' "${!seeds[@]}"; exit 0 ;;
esac
read -r start end record <<< "${seeds[$1]}"
if [ "$start" != - ]; then
  echo "UPDATE run SET start_ns = $start, end_ns = $end;"
  echo "UPDATE processes SET start_ns = $start, end_ns = $end;"
  echo "INSERT OR REPLACE INTO meta VALUES('samples_thinned_until_ns', '$end');"
fi
for table in proc_samples host_samples step_samples events log_lines log_writers gpu_samples \
    gpu_process_samples gpu_events process_cgroups cgroup_samples kernel_oom_kills; do
  echo "UPDATE $table SET t_ns = $record;"
done
echo "UPDATE crashes SET time_ns = $record;"
echo "UPDATE gpu_processes SET first_seen_ns = $record;"
if [ "$start" != - ]; then
  echo "UPDATE collectives SET t_ns = $start, end_ns = $end;"
  echo "UPDATE collective_issues SET t_ns = $end, first_ns = $start;"
else
  echo "UPDATE collectives SET t_ns = $record, end_ns = $record;"
  echo "UPDATE collective_issues SET t_ns = $record, first_ns = $record;"
fi
