# bash completion for aimsweep: commands, each command's flags and the values of flags that take
# one of a list, all read from the binary's own --help, so they follow the binary installed.
# Installed as PREFIX/share/bash-completion/completions/aimsweep; by hand: source this file.

_aimsweep_commands() {
    "$1" --help 2>/dev/null | awk '/^environment:/ {exit} /^  [a-z]+ +[a-zA-Z(]/ {print $1}'
}

# The values a flag takes: from a help line "  --flag  [default]  a | b | c" (the parameters of
# single, run and plan), or "--flag a|b|c" in a usage line.
_aimsweep_values() {
    local bin=$1 cmd=$2 flag=$3 help
    help=$("$bin" "$cmd" --help 2>/dev/null)
    case $cmd in run|plan) help+=$'\n'$("$bin" single --help 2>/dev/null) ;; esac
    printf '%s\n' "$help" | awk -v f="$flag" '
        {
            for (i = 1; i <= NF; i++) {
                if ($i == f && i < NF && $(i + 1) ~ /^\[/) {
                    rest = ""
                    for (j = i + 2; j <= NF; j++) rest = rest " " $j
                    n = split(rest, alt, "|")
                    for (k = 1; k <= n; k++) {
                        v = alt[k]; gsub(/^ +| +$/, "", v)
                        if (v ~ /^h1\.\.h([0-9])$/) { for (h = 1; h <= substr(v, 6) + 0; h++) print "h" h; continue }
                        if (v ~ /^[a-z_0-9]+\(/) { sub(/\(.*/, "(", v); print v; continue }
                        if (v ~ /^[a-z_0-9.]+$/) print v
                    }
                    exit
                }
                if (index($i, "[" f) == 1 || $i == f) {
                    nxt = $(i + 1); gsub(/[]\[]/, "", nxt)
                    if (nxt ~ /^[a-z0-9_]+(\|[a-z0-9_]+)+$/) { n = split(nxt, alt, "|"); for (k = 1; k <= n; k++) print alt[k]; exit }
                }
            }
        }'
}

_aimsweep() {
    local cur prev bin cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    bin=${COMP_WORDS[0]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_aimsweep_commands "$bin") help --help --version" -- "$cur")
        return
    fi
    cmd=${COMP_WORDS[1]}
    if [ "$cmd" = help ]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_aimsweep_commands "$bin")" -- "$cur")
        return
    fi
    if [[ $prev == --* ]]; then
        local values
        values=$(_aimsweep_values "$bin" "$cmd" "$prev")
        if [ -n "$values" ]; then
            mapfile -t COMPREPLY < <(compgen -W "$values" -- "$cur")
            return
        fi
        case $prev in
            --db|--out|--file) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
        esac
    fi
    if [[ $cur == -* ]]; then
        local flags
        flags=$("$bin" "$cmd" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
        mapfile -t COMPREPLY < <(compgen -W "$flags" -- "$cur")
        return
    fi
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -o default -F _aimsweep aimsweep
