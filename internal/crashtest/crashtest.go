// Package crashtest ends a test's child process at once, as a crash or a power cut would, and
// tells that end from the child's own exit. The crash tests of the vault (SQLite state) and of
// the Host (the approval send path) use it on every platform they run on.
//
// On Unix systems the child gets SIGKILL. On Windows it is ended with TerminateProcess and an
// exit code of its own ([ExitCode]): os.Process.Kill also calls TerminateProcess, but with exit
// code 1, which a failing Go test gives too.
package crashtest

// ExitCode is the exit code of a child Kill ended on Windows: 137, what a Unix shell reports for
// a process ended by SIGKILL (128 + 9).
const ExitCode = 137
