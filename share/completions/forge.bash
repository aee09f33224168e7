# bash completion for forge (installed as
# $(PREFIX)/share/bash-completion/completions/forge by make install).
#
# Nothing here lists a command or an option: they come from the programs
# themselves (`forge --help-words`, `forge CMD --help-words`, made from the
# same tables as --help), so a new program or subcommand completes as soon as
# it is installed.  Operands named TRACE complete with the trace ids of
# `forge history --json`; PATH (forge config get|set) with the configuration's
# keys; PIPELINE with the names `forge pipeline list` prints and file names;
# FILE and DIR with file names.

# _forge_field KIND FIELD: FIELD (2 or 3) of the --help-words lines of KIND
# in $_forge_words.
_forge_field() {
	local kind word arg line
	while IFS=$'\t' read -r kind word arg; do
		[ "$kind" = "$1" ] || continue
		if [ "$2" = 2 ]; then line=$word; else line=$arg; fi
		printf '%s\n' "$line"
	done <<<"$_forge_words"
}

# _forge_arg_of OPTION: the argument name an option takes, "" for a flag.
_forge_arg_of() {
	local kind word arg
	while IFS=$'\t' read -r kind word arg; do
		if [ "$kind" = option ] && [ "$word" = "$1" ]; then
			printf '%s' "$arg"
			return
		fi
	done <<<"$_forge_words"
}

# _forge_operand NAME CUR: complete an operand by its name in the synopsis.
_forge_operand() {
	local forge=$3
	case $1 in
	*TRACE*)
		local traces
		traces=$("$forge" history --json -n 50 2>/dev/null |
			sed -n 's/.*"trace_id":"\([^"]*\)".*/\1/p')
		mapfile -t COMPREPLY < <(compgen -W "$traces" -- "$2")
		;;
	PATH)
		# forge config get|set PATH: the configuration's keys
		local keys
		keys=$("$forge" config --explain 2>/dev/null | sed -n 's/^\([^ ]*\) = .*/\1/p')
		mapfile -t COMPREPLY < <(compgen -W "$keys" -- "$2")
		;;
	PIPELINE)
		# forge pipeline check|show: the names it finds, and files
		local names
		names=$("$forge" pipeline list 2>/dev/null | sed 's/ .*//')
		mapfile -t COMPREPLY < <(compgen -W "$names" -- "$2"; compgen -f -- "$2")
		;;
	FILE* | DIR*)
		mapfile -t COMPREPLY < <(compgen -f -- "$2")
		;;
	esac
}

_forge() {
	local forge=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]}
	local prev=${COMP_WORDS[COMP_CWORD - 1]}
	local i w cmd="" sub="" n=0 _forge_words
	COMPREPLY=()

	# the command and its subcommand: the first words that are not options
	# (nor an option's argument)
	_forge_words=$("$forge" --help-words 2>/dev/null)
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w == -* ]]; then
			[[ $w == *=* ]] || [ -z "$(_forge_arg_of "$w")" ] || ((i++))
			continue
		fi
		if [ -z "$cmd" ]; then
			cmd=$w
			_forge_words=$("$forge" "$cmd" --help-words 2>/dev/null)
		elif [ -z "$sub" ]; then
			sub=$w
		else
			n=$((n + 1))
		fi
	done

	# an option's argument
	if [[ $prev == -* ]] && [[ $prev != *=* ]] && [ -n "$(_forge_arg_of "$prev")" ]; then
		_forge_operand "$(_forge_arg_of "$prev")" "$cur" "$forge"
		return
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_forge_field option 2)" -- "$cur")
		return
	fi
	if [ -z "$cmd" ]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_forge_field command 2)" -- "$cur")
		return
	fi
	local subs
	subs=$(_forge_field command 2)
	if [ -z "$sub" ] && [ -n "$subs" ]; then
		mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
		return
	fi
	# an operand: the subcommand's first, or the command's own
	local kind word arg operand=""
	while IFS=$'\t' read -r kind word arg; do
		if [ -n "$subs" ] && [ "$kind" = command ] && [ "$word" = "$sub" ] && [ "$n" = 0 ]; then
			operand=$arg
		elif [ -z "$subs" ] && [ "$kind" = operand ] && [ -z "$operand" ] && [ -z "$sub" ]; then
			operand=$word
		fi
	done <<<"$_forge_words"
	[ -z "$operand" ] || _forge_operand "$operand" "$cur" "$forge"
}

complete -F _forge forge
