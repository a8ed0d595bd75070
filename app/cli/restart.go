package cli

// Restarting from the window (app.Host.Restart): "Get started" restarts Poppydesk with the
// identity it enrolled, "Try the demo" restarts it as the demo, and "Leave the demo" as the
// user's own Poppydesk again. The window's restarter records what to start as and quits the
// window; once the Host is closed, runWindow starts the same program again in this process
// (exec, so the process and its launcher stay the same), with the restart named in
// envRestarted and, for the demo, the user's own command line in envReturnArgs.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/poppydesk/poppydesk/app"
)

const (
	// envRestarted names the restart this start follows (an app.RestartTo).
	envRestarted = "POPPYDESK_RESTARTED"
	// envReturnArgs is the user's own command line (a JSON array) while the demo started from
	// the window runs; leaving the demo starts it again.
	envReturnArgs = "POPPYDESK_RETURN_ARGS"
	// instanceRelease bounds the wait for the previous window's single-instance lock.
	instanceRelease = 5 * time.Second
)

// restarter is the composition's side of app.Config.Restart for the Wails window.
type restarter struct {
	mu   sync.Mutex
	to   app.RestartTo
	quit func() // quits the window; set once it started
}

// setQuit is called when the window has started.
func (r *restarter) setQuit(quit func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.quit = quit
}

// request records to and quits the window (after the window's call has its answer).
func (r *restarter) request(to app.RestartTo) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.quit == nil {
		return &app.Error{Message: "The window has not finished opening", Hint: "Try again in a moment"}
	}
	if r.to == "" {
		r.to = to
		go r.quit()
	}
	return nil
}

func (r *restarter) requested() app.RestartTo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.to
}

// restartArgs is the command line and the environment the program starts with as to, from the
// current ones.
func restartArgs(to app.RestartTo, args, environ []string, getenv func(string) string) ([]string, []string, error) {
	environ = slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		return strings.HasPrefix(kv, envRestarted+"=") || strings.HasPrefix(kv, envReturnArgs+"=")
	})
	environ = append(environ, envRestarted+"="+string(to))
	switch to {
	case app.RestartReady:
		return args, environ, nil
	case app.RestartDemo:
		own, err := json.Marshal(args)
		if err != nil {
			return nil, nil, err
		}
		return []string{"demo"}, append(environ, envReturnArgs+"="+string(own)), nil
	case app.RestartHome:
		var own []string
		if v := getenv(envReturnArgs); v != "" {
			if err := json.Unmarshal([]byte(v), &own); err != nil {
				return nil, nil, fmt.Errorf("the command line to go back to (%s) is unreadable: %w", envReturnArgs, err)
			}
		}
		return own, environ, nil
	}
	return nil, nil, fmt.Errorf("poppydesk cannot restart as %q", to)
}

// restartProgram starts the program again as to: in this process where the system can (exec),
// else as a new process while this one ends.
func restartProgram(env *Env, to app.RestartTo) error {
	exe, err := env.executable()
	if err != nil {
		return err
	}
	args, environ, err := restartArgs(to, env.Args, os.Environ(), env.Getenv)
	if err != nil {
		return err
	}
	err = syscall.Exec(exe, append([]string{exe}, args...), environ)
	// Only reached where exec is not available (Windows) or failed.
	cmd := exec.Command(exe, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = environ, env.Stdout, env.Stderr
	if serr := cmd.Start(); serr != nil {
		return &app.Error{Message: "Poppydesk closed to restart, but could not start again", Err: errors.Join(err, serr), Hint: "Start it from the menu"}
	}
	return nil
}
