# test_sn_expect_graph.awk — what libsn must report for a run of build/sntrain,
# from the trainer's own --dump-graph file: layers per type, forks, joins,
# layers with a forward and a backward pass, and the trainer's device-side
# calls per iteration in each phase (its "steps" line, counted by the
# trainer as it runs). Prints "key value" lines, sorted by the caller.
/^tensor / {
    t = $2
    for (i = 3; i <= NF; i++)
        if ($i == "consumers") cons[t] = $(i + 1)
    if (cons[t] > 1) forks++
}
/^layer / {
    nl++
    count[$3]++
    ins = ""
    for (i = 4; i <= NF; i++)
        if ($i == "in") ins = $(i + 1)
    nin = (ins == "-") ? 0 : split(ins, in_ids, ",")
    if (nin > 1) joins++
    # every layer but the data layer has a backward pass
    if ($3 != "data") bwd_layers++
}
/^steps / { fwd = $3; bwd = $5; upd = $7; steps = 1 }
END {
    for (t in count) printf "type %s %d\n", t, count[t]
    printf "forks %d\n", forks + 0
    printf "joins %d\n", joins + 0
    printf "forward_layers %d\n", nl
    printf "backward_layers %d\n", bwd_layers
    if (steps) {
        printf "forward_steps %d\n", fwd
        printf "backward_steps %d\n", bwd
        printf "update_steps %d\n", upd
        printf "period %d\n", fwd + bwd + upd
    }
}
