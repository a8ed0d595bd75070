package modelapi

import (
	"errors"
	"net"
	"unsafe"

	"golang.org/x/sys/windows"
)

// peerVia says how a named pipe connection reached the endpoint (viaOfPeer): the client's process
// id from GetNamedPipeClientProcessId, its program from QueryFullProcessImageName and its command
// line (commandLine), split as Windows programs split theirs (CommandLineToArgv). The pipe's
// security descriptor admits only this user, whose processes this one may open. It is "" for a
// connection that is not a pipe and [ViaSocket] when the client cannot be read.
func peerVia(conn net.Conn) string {
	f, ok := conn.(interface{ Fd() uintptr })
	if !ok {
		return ""
	}
	var pid uint32
	if err := windows.GetNamedPipeClientProcessId(windows.Handle(f.Fd()), &pid); err != nil {
		return ViaSocket
	}
	if int(pid) == windows.Getpid() {
		return "" // an in-process client (viaOfPeer)
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return ViaSocket
	}
	defer windows.CloseHandle(h)
	exe, err := imagePath(h)
	if err != nil {
		return ViaSocket
	}
	return viaOfPeer(int(pid), exe, func() []string {
		line, err := commandLine(h, pid)
		if err != nil {
			return nil
		}
		args, err := windows.DecomposeCommandLine(line)
		if err != nil {
			return nil
		}
		return args
	})
}

// imagePath is the full Win32 path of the program process h runs.
func imagePath(h windows.Handle) (string, error) {
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return "", err
	}
	return windows.UTF16ToString(buf[:n]), nil
}

// commandLine is the command line process h (of id pid) was started with, from
// NtQueryInformationProcess(ProcessCommandLineInformation), the supported way since Windows 8.1.
// Where that information class is unknown (STATUS_INVALID_INFO_CLASS: Wine 8, whose test runs
// therefore take the other way), it is read from the process's memory (commandLineFromPEB).
func commandLine(h windows.Handle, pid uint32) (string, error) {
	line, err := commandLineInfo(h)
	if errors.Is(err, windows.STATUS_INVALID_INFO_CLASS) {
		return commandLineFromPEB(pid)
	}
	return line, err
}

// commandLineInfo asks for ProcessCommandLineInformation: a UNICODE_STRING followed by its
// characters, in a buffer grown to the length the system asks for.
func commandLineInfo(h windows.Handle) (string, error) {
	buf := make([]uint64, 16) // uint64 keeps the UNICODE_STRING's pointer aligned
	for range 4 {
		var need uint32
		err := windows.NtQueryInformationProcess(h, windows.ProcessCommandLineInformation,
			unsafe.Pointer(&buf[0]), uint32(len(buf)*8), &need)
		if errors.Is(err, windows.STATUS_INFO_LENGTH_MISMATCH) || errors.Is(err, windows.STATUS_BUFFER_TOO_SMALL) ||
			errors.Is(err, windows.STATUS_BUFFER_OVERFLOW) {
			buf = make([]uint64, max(int(need+7)/8, 2*len(buf)))
			continue
		}
		if err != nil {
			return "", err
		}
		return (*windows.NTUnicodeString)(unsafe.Pointer(&buf[0])).String(), nil
	}
	return "", errors.New("the command line kept growing")
}

// commandLineFromPEB reads the command line of process pid from its memory: the PEB's address
// (ProcessBasicInformation), the PEB's ProcessParameters, their CommandLine. The layouts are
// x/sys/windows's; the other process's addresses are only ever held as uintptr, never as Go
// pointers.
func commandLineFromPEB(pid uint32) (string, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION|windows.PROCESS_VM_READ, false, pid)
	if err != nil {
		return "", err
	}
	defer windows.CloseHandle(h)
	var pbi [unsafe.Sizeof(windows.PROCESS_BASIC_INFORMATION{})]byte
	if err := windows.NtQueryInformationProcess(h, windows.ProcessBasicInformation, unsafe.Pointer(&pbi[0]), uint32(len(pbi)), nil); err != nil {
		return "", err
	}
	peb := *(*uintptr)(unsafe.Pointer(&pbi[unsafe.Offsetof(windows.PROCESS_BASIC_INFORMATION{}.PebBaseAddress)]))
	var params uintptr
	if err := readAt(h, peb+unsafe.Offsetof(windows.PEB{}.ProcessParameters), unsafe.Pointer(&params), unsafe.Sizeof(params)); err != nil {
		return "", err
	}
	var line struct { // windows.NTUnicodeString's layout, its Buffer another process's address
		Length, MaximumLength uint16
		Buffer                uintptr
	}
	if err := readAt(h, params+unsafe.Offsetof(windows.RTL_USER_PROCESS_PARAMETERS{}.CommandLine), unsafe.Pointer(&line), unsafe.Sizeof(line)); err != nil {
		return "", err
	}
	if line.Length == 0 {
		return "", nil
	}
	chars := make([]uint16, line.Length/2)
	if err := readAt(h, line.Buffer, unsafe.Pointer(&chars[0]), uintptr(len(chars))*2); err != nil {
		return "", err
	}
	return windows.UTF16ToString(chars), nil
}

// readAt reads size bytes at addr of process h into p.
func readAt(h windows.Handle, addr uintptr, p unsafe.Pointer, size uintptr) error {
	return windows.ReadProcessMemory(h, addr, (*byte)(p), size, nil)
}
