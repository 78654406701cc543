# bash completion for the btk tools: options, verbs and files, read from each tool's own
# --help (so a new option completes without a change here). Installed once per tool name.

# The words of "TOOL [VERB] --help" that look like options (every tool takes --help and
# --version, whether its usage lists them or not).
_btk_options()
{
	{
		printf '%s\n' --help --version
		"$@" --help 2>&1 | grep -oE '(^|[[:space:][,|])--?[A-Za-z0-9][A-Za-z0-9-]*' |
			sed -E 's/^[[:space:][,|]+//'
	} | sort -u
}

# The verbs a tool lists in its --help: btk-image ("  ls  ..."), btk-debug ("btk-debug tree").
_btk_verbs()
{
	case $1 in
	btk-image) "$1" --help 2>&1 | sed -nE 's/^  ([a-z]+) .*/\1/p' ;;
	btk-debug) "$1" --help 2>&1 | grep -oE 'btk-debug [a-z]+' | sed 's/^btk-debug //' |
		grep -vx COMMAND | sort -u ;;
	esac
}

_btk()
{
	local tool=${COMP_WORDS[0]##*/} cur=${COMP_WORDS[COMP_CWORD]} verbs verb=""
	verbs=$(_btk_verbs "$tool")
	if [ -n "$verbs" ] && [ "$COMP_CWORD" -ge 2 ]; then
		verb=${COMP_WORDS[1]}
	fi
	COMPREPLY=()
	if [ -n "$verbs" ] && [ "$COMP_CWORD" -eq 1 ] && [[ $cur != -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$verbs" -- "$cur")
	elif [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_btk_options "$tool" $verb)" -- "$cur")
	else
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	fi
}

complete -o filenames -F _btk btk-mkfs btk-fsck btk-convert btk-resize btk-owner btk-debug btk-image btk-undo
