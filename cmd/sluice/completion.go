package main

// "sluice completion bash|zsh": a shell completion script generated from
// the command table (nouns, verbs and their flags).

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// completionWords maps "noun" and "noun verb" to the words that may follow.
func completionWords() map[string][]string {
	words := map[string][]string{}
	top := []string{"completion", "dev", "format", "help", "version"}
	for _, n := range nouns {
		top = append(top, n.name)
		for _, v := range n.verbs {
			fs := flag.NewFlagSet("", flag.ContinueOnError)
			v.setup(fs)
			addClientFlags(fs, func(string) string { return "" })
			var flags []string
			fs.VisitAll(func(f *flag.Flag) {
				if len(f.Name) == 1 {
					flags = append(flags, "-"+f.Name)
				} else {
					flags = append(flags, "--"+f.Name)
				}
			})
			key := strings.TrimSpace(n.name + " " + v.name)
			words[key] = flags
			if v.name != "" {
				words[n.name] = append(words[n.name], v.name)
			}
		}
	}
	for alias, target := range aliases {
		top = append(top, alias)
		for k, w := range words {
			if k == target || strings.HasPrefix(k, target+" ") {
				words[alias+strings.TrimPrefix(k, target)] = w
			}
		}
	}
	words["completion"] = []string{"bash", "zsh"}
	words["dev"] = []string{"cluster"}
	sort.Strings(top)
	words[""] = top
	for _, w := range top { // "sluice help COMMAND"
		if w != "help" {
			words["help"] = append(words["help"], w)
		}
	}
	return words
}

func completionCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, "Usage: sluice completion bash|zsh\n\nPrints a completion script: source <(sluice completion bash), or for zsh\nsluice completion zsh > \"${fpath[1]}/_sluice\".")
			return 0
		}
		fmt.Fprintln(stderr, "Usage: sluice completion bash|zsh")
		return 2
	}
	words := completionWords()
	var b strings.Builder
	if args[0] == "zsh" {
		b.WriteString("#compdef sluice\nautoload -U +X bashcompinit && bashcompinit\n")
	}
	b.WriteString("# sluice shell completion (sluice completion " + args[0] + ")\n_sluice() {\n")
	b.WriteString("  local cur=\"${COMP_WORDS[COMP_CWORD]}\" key=\"\" w\n")
	b.WriteString("  for ((i = 1; i < COMP_CWORD && i < 3; i++)); do\n")
	b.WriteString("    w=\"${COMP_WORDS[i]}\"\n    [[ $w == -* ]] && break\n    key=\"${key:+$key }$w\"\n  done\n")
	b.WriteString("  local words=\"\"\n  case \"$key\" in\n")
	for _, k := range sortedKeys(words) {
		pattern := fmt.Sprintf("%q", k)
		if k == "produce" || k == "consume" { // NOUN TOPIC... takes flags after the topic too
			pattern += fmt.Sprintf("|%q*", k+" ")
		}
		fmt.Fprintf(&b, "    %s) words=%q ;;\n", pattern, strings.Join(words[k], " "))
	}
	b.WriteString("  esac\n  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\ncomplete -F _sluice sluice\n")
	io.WriteString(stdout, b.String())
	return 0
}
