# test_sn_report_facts.awk — the same facts as test_sn_expect_graph.awk, read from
# libsn's text report (lines prefixed "libsn: "), for comparison.
{ sub(/^libsn: /, "") }
/^iteration +period/ { printf "period %d\n", $3; printf "iterations %d\n", $5 }
/^phases/ {
    printf "forward_steps %d\nforward_layers %d\n", $3, $6
    printf "backward_steps %d\nbackward_layers %d\n", $9, $12
    printf "update_steps %d\n", $15
}
/^layers +[0-9]+:/ {
    line = $0; sub(/^layers +[0-9]+: /, "", line)
    n = split(line, parts, ", ")
    for (i = 1; i <= n; i++) { split(parts[i], kv, " "); printf "type %s %d\n", kv[1], kv[2] }
}
/^graph/ { printf "forks %d\njoins %d\n", $2, $4 }
