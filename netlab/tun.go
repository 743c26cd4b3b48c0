package netlab

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openTUN creates the TUN device name (IFF_TUN|IFF_NO_PI: every read and
// write is one bare IP packet) in the calling thread's network namespace.
// The device lives as long as the returned file stays open; the file is
// non-blocking and served by Go's poller, so Close wakes a blocked Read.
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tun %s: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tun %s: TUNSETIFF: %w", name, err)
	}
	// The setup commands address the device by name: check the kernel
	// kept it.
	if got := ifr.Name(); got != name {
		unix.Close(fd)
		return nil, fmt.Errorf("tun %s: kernel named it %q", name, got)
	}
	return os.NewFile(uintptr(fd), "tun:"+name), nil
}
