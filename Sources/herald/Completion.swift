import ArgumentParser

/// `herald completion bash|zsh|fish`: the shell's completion script for every command.
struct Completion: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "completion",
        abstract: "Print the completion script of a shell (bash, zsh or fish) for herald's commands and options.",
        discussion: """
            Load it in the current shell, or install it where the shell reads completions:

              bash:  source <(herald completion bash)
              zsh:   herald completion zsh > "${fpath[1]}/_herald"
              fish:  herald completion fish > ~/.config/fish/completions/herald.fish
            """
    )

    @Argument(help: "bash, zsh or fish.")
    var shell: String

    func validate() throws {
        guard CompletionShell(rawValue: shell) != nil else {
            throw ValidationError("'\(shell)' is not a shell herald writes completions for: use bash, zsh or fish")
        }
    }

    func run() throws {
        guard let shell = CompletionShell(rawValue: shell) else { return }
        print(Herald.completionScript(for: shell), terminator: "")
    }
}
