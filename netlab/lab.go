package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flurrypt/flurry/netlab/censor"
)

// Side names one of the lab's two namespaces.
type Side uint8

const (
	// Client is the client side: a user's network behind the box.
	Client Side = iota
	// Outside is everything beyond the box: broker, relay, proxies, STUN.
	Outside
)

func (s Side) String() string {
	switch s {
	case Client:
		return "client"
	case Outside:
		return "outside"
	}
	return fmt.Sprintf("Side(%d)", uint8(s))
}

// DefaultMaxQueuedPackets bounds the packets one direction holds, when
// Config.MaxQueuedPackets is zero: 150 ms of 1500-byte packets at 100 MB/s.
const DefaultMaxQueuedPackets = 10000

// The lab's networks: the client side has ClientNet's .2; the outside has
// OutsideNet's .1 to .9 (OutsideAddr(0) to OutsideAddr(8)).
const (
	// ClientNet is the client side's network (TEST-NET-2).
	ClientNet = "198.51.100.0/24"
	// OutsideNet is the outside's network (TEST-NET-3).
	OutsideNet = "203.0.113.0/24"
)

// NumOutsideAddrs is the number of host addresses on the outside.
const NumOutsideAddrs = 9

// Config configures a Lab. The zero Config is a lab with a perfect path, no
// censor and a name made from the process id.
type Config struct {
	// Name prefixes the namespaces (<Name>c, <Name>o) and the TUN devices
	// (<Name>-c, <Name>-o): 1 to 12 characters of a-z, 0-9. Empty means
	// "fl" and the process id modulo 100000. Namespaces of the same name
	// left by an earlier run are removed.
	Name string
	// Up shapes packets from the client side to the outside, Down the
	// other way. Zero Profiles are perfect.
	Up, Down Profile
	// Censor judges every packet before path shaping; nil passes all.
	Censor censor.Program
	// Seed seeds the random numbers of loss and jitter, so that a run can
	// be repeated.
	Seed uint64
	// MaxQueuedPackets bounds the packets each direction holds; more are
	// dropped as queue overflow. Zero means DefaultMaxQueuedPackets.
	MaxQueuedPackets int
	// Logger receives setup and teardown messages; nil discards them.
	Logger *slog.Logger
}

// validName reports whether name is 1 to 12 characters of a-z, 0-9, so
// that every interface name made from it stays under 15 characters.
func validName(name string) bool {
	if len(name) < 1 || len(name) > 12 {
		return false
	}
	for _, c := range []byte(name) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Lab is two network namespaces joined by a user-space middlebox: every IP
// packet between them crosses this process, which may censor, delay, drop
// and rate-limit it. Its methods are safe for concurrent use.
type Lab struct {
	name     string
	log      *slog.Logger
	ip       string    // path of the ip command
	ns       [2]string // namespace names by Side
	devs     [2]string // TUN device names by Side
	tuns     [2]*os.File
	nsMu     sync.RWMutex
	nsFiles  [2]*os.File // guarded by nsMu: namespace handles for Setns, by Side
	paths    [2]*path    // by censor.Direction
	counters [2]counters // by censor.Direction
	pool     *packetPool
	done     chan struct{}
	wg       sync.WaitGroup

	judgeMu sync.Mutex
	censor  censor.Program // guarded by judgeMu

	closeOnce sync.Once
	closeErr  error
}

// New builds a lab: it needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN). It
// creates the namespaces and the TUN devices, configures addresses and
// routes, and starts the box. ctx bounds the setup only; the lab runs until
// Close.
func New(ctx context.Context, cfg Config) (*Lab, error) {
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("fl%d", os.Getpid()%100000)
	}
	if !validName(cfg.Name) {
		return nil, fmt.Errorf("%w: name %q: want 1 to 12 characters of a-z, 0-9", ErrInvalidConfig, cfg.Name)
	}
	if err := cfg.Up.validate(); err != nil {
		return nil, fmt.Errorf("%w: up: %w", ErrInvalidConfig, err)
	}
	if err := cfg.Down.validate(); err != nil {
		return nil, fmt.Errorf("%w: down: %w", ErrInvalidConfig, err)
	}
	if cfg.MaxQueuedPackets < 0 {
		return nil, fmt.Errorf("%w: MaxQueuedPackets %d < 0", ErrInvalidConfig, cfg.MaxQueuedPackets)
	}
	if cfg.MaxQueuedPackets == 0 {
		cfg.MaxQueuedPackets = DefaultMaxQueuedPackets
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ip, err := findIP()
	if err != nil {
		return nil, err
	}
	l := &Lab{
		name:   cfg.Name,
		log:    cfg.Logger.With("lab", cfg.Name),
		ip:     ip,
		ns:     [2]string{cfg.Name + "c", cfg.Name + "o"},
		devs:   [2]string{cfg.Name + "-c", cfg.Name + "-o"},
		pool:   newPacketPool(),
		done:   make(chan struct{}),
		censor: cfg.Censor,
	}
	if err := l.setup(ctx); err != nil {
		l.teardown()
		return nil, err
	}
	// Outbound packets are read from the client's TUN and written to the
	// outside's; inbound the other way.
	l.paths[censor.Outbound] = newPath(l.tuns[Outside], l.pool, &l.counters[censor.Outbound], cfg.Up, cfg.Seed, cfg.MaxQueuedPackets)
	l.paths[censor.Inbound] = newPath(l.tuns[Client], l.pool, &l.counters[censor.Inbound], cfg.Down, cfg.Seed^0x9e3779b97f4a7c15, cfg.MaxQueuedPackets)
	for _, d := range []censor.Direction{censor.Outbound, censor.Inbound} {
		in := l.tuns[Client]
		if d == censor.Inbound {
			in = l.tuns[Outside]
		}
		l.wg.Add(2)
		go func() {
			defer l.wg.Done()
			l.paths[d].run(l.done)
		}()
		go func() {
			defer l.wg.Done()
			l.read(d, in)
		}()
	}
	l.log.Debug("lab up", "client_ns", l.ns[Client], "outside_ns", l.ns[Outside])
	return l, nil
}

// findIP returns the path of iproute2's ip command.
func findIP() (string, error) {
	if p, err := exec.LookPath("ip"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no ip command (install iproute2)", ErrInvalidConfig)
}

// run runs the ip command with args.
func (l *Lab) run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, l.ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeStale deletes namespaces and devices of this lab's name that an
// earlier run left behind.
func (l *Lab) removeStale(ctx context.Context) {
	for _, ns := range l.ns {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			l.log.Info("removing stale namespace", "ns", ns)
			_ = l.run(ctx, "netns", "del", ns)
		}
	}
	for _, dev := range l.devs {
		if _, err := os.Stat("/sys/class/net/" + dev); err == nil {
			l.log.Info("removing stale device", "dev", dev)
			_ = l.run(ctx, "link", "del", dev)
		}
	}
}

func (l *Lab) setup(ctx context.Context) error {
	l.removeStale(ctx)
	for _, s := range []Side{Client, Outside} {
		tun, err := openTUN(l.devs[s])
		if err != nil {
			return err
		}
		l.tuns[s] = tun
		if err := l.run(ctx, "netns", "add", l.ns[s]); err != nil {
			return err
		}
		f, err := os.Open("/run/netns/" + l.ns[s])
		if err != nil {
			return fmt.Errorf("open namespace %s: %w", l.ns[s], err)
		}
		l.nsMu.Lock()
		l.nsFiles[s] = f
		l.nsMu.Unlock()
		if err := l.run(ctx, "link", "set", l.devs[s], "netns", l.ns[s]); err != nil {
			return err
		}
		// No reverse path filter may drop what the box forwards, and no
		// IPv6 autoconfiguration chatter crosses it.
		if err := l.Do(s, func() error {
			for _, name := range []string{
				"net/ipv4/conf/all/rp_filter", "net/ipv4/conf/default/rp_filter",
				"net/ipv4/conf/" + l.devs[s] + "/rp_filter",
				"net/ipv6/conf/" + l.devs[s] + "/disable_ipv6",
			} {
				val := "0\n"
				if strings.HasSuffix(name, "disable_ipv6") {
					val = "1\n"
				}
				if err := os.WriteFile("/proc/sys/"+name, []byte(val), 0); err != nil {
					return fmt.Errorf("sysctl %s: %w", name, err)
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	c, o, dc, do := l.ns[Client], l.ns[Outside], l.devs[Client], l.devs[Outside]
	cmds := [][]string{
		{"-n", c, "link", "set", "lo", "up"},
		{"-n", c, "link", "set", dc, "mtu", fmt.Sprint(mtu), "up"},
		{"-n", c, "addr", "add", l.ClientAddr().String() + "/24", "dev", dc},
		{"-n", c, "route", "add", "default", "dev", dc},
		{"-n", o, "link", "set", "lo", "up"},
		{"-n", o, "link", "set", do, "mtu", fmt.Sprint(mtu), "up"},
		{"-n", o, "addr", "add", l.OutsideAddr(0).String() + "/24", "dev", do},
		{"-n", o, "route", "add", ClientNet, "dev", do},
	}
	for i := 1; i < NumOutsideAddrs; i++ {
		cmds = append(cmds, []string{"-n", o, "addr", "add", l.OutsideAddr(i).String() + "/32", "dev", do})
	}
	for _, args := range cmds {
		if err := l.run(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// read reads packets from in and passes them to the censor and the path of
// direction d, until in is closed.
func (l *Lab) read(d censor.Direction, in *os.File) {
	c, p := &l.counters[d], l.paths[d]
	for {
		pk := l.pool.get()
		n, err := in.Read(pk.buf[:])
		if err != nil {
			l.pool.put(pk)
			if errors.Is(err, os.ErrClosed) {
				return
			}
			select {
			case <-l.done:
				return
			default:
			}
			l.log.Warn("tun read", "dir", d, "err", err)
			// A TUN device returns errors only when it is going away; do
			// not spin on one.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if n == 0 {
			l.pool.put(pk)
			continue
		}
		pk.n = n
		now := time.Now()
		c.packets.Add(1)
		c.bytes.Add(uint64(n))
		if l.judge(now, d, pk.bytes()) == censor.Drop {
			c.censorDropped.Add(1)
			l.pool.put(pk)
			continue
		}
		p.submit(now, pk)
	}
}

// judge asks the censor program, if any, about pkt. Calls never overlap
// and come in the order the box saw the packets.
func (l *Lab) judge(now time.Time, d censor.Direction, pkt []byte) censor.Verdict {
	l.judgeMu.Lock()
	defer l.judgeMu.Unlock()
	if l.censor == nil {
		return censor.Pass
	}
	return l.censor.Judge(now, d, pkt)
}

// SetCensor replaces the censor program; nil removes it.
func (l *Lab) SetCensor(p censor.Program) {
	l.judgeMu.Lock()
	l.censor = p
	l.judgeMu.Unlock()
}

// Stats are the box's counters, per direction.
type Stats struct {
	// Up counts packets from the client side to the outside (Outbound),
	// Down the other way (Inbound).
	Up, Down DirStats
}

// Sub returns s - o: the counts of an interval between two snapshots.
func (s Stats) Sub(o Stats) Stats {
	return Stats{Up: s.Up.sub(o.Up), Down: s.Down.sub(o.Down)}
}

// String formats the stats on two lines.
func (s Stats) String() string {
	line := func(name string, d DirStats) string {
		return fmt.Sprintf("%-4s in %d pkts %d B, delivered %d pkts %d B, dropped: censor %d, loss %d, queue %d, write errors %d",
			name, d.Packets, d.Bytes, d.Delivered, d.DeliveredBytes, d.CensorDropped, d.LossDropped, d.QueueDropped, d.WriteErrors)
	}
	return line("up", s.Up) + "\n" + line("down", s.Down)
}

// Stats returns the counters so far.
func (l *Lab) Stats() Stats {
	return Stats{
		Up:   l.counters[censor.Outbound].snapshot(),
		Down: l.counters[censor.Inbound].snapshot(),
	}
}

// Name returns the lab's name, the prefix of its namespaces and devices.
func (l *Lab) Name() string { return l.name }

// Namespace returns the name of a side's network namespace.
func (l *Lab) Namespace(side Side) string { return l.ns[side] }

// ClientAddr is the client side's address, 198.51.100.2.
func (l *Lab) ClientAddr() netip.Addr { return netip.AddrFrom4([4]byte{198, 51, 100, 2}) }

// OutsideAddr returns the outside's i-th address: i = 0..8 gives
// 203.0.113.1 to 203.0.113.9. Other i give an invalid Addr.
func (l *Lab) OutsideAddr(i int) netip.Addr {
	if i < 0 || i >= NumOutsideAddrs {
		return netip.Addr{}
	}
	return netip.AddrFrom4([4]byte{203, 0, 113, byte(1 + i)})
}

// Command returns a command that runs name with args in a side's
// namespace (through ip netns exec).
func (l *Lab) Command(side Side, name string, args ...string) *exec.Cmd {
	return exec.Command(l.ip, append([]string{"netns", "exec", l.ns[side], name}, args...)...)
}

// Do runs fn on an OS thread switched into a side's network namespace and
// waits for it. Sockets fn creates stay in that namespace and may be used
// from any goroutine afterwards; goroutines fn starts run outside it.
func (l *Lab) Do(side Side, fn func() error) error {
	if side != Client && side != Outside {
		return fmt.Errorf("do in %s: no such side", side)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Unlocked only once the thread is back home: if that fails, the
		// goroutine ends locked and the runtime retires the thread.
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("do in %s: %w", side, err)
			return
		}
		defer home.Close()
		if err := l.enter(side); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("do in %s: %w", side, err)
			return
		}
		fnErr := fn()
		if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(fnErr, fmt.Errorf("do in %s: setns back: %w", side, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- fnErr
	}()
	return <-errc
}

// enter switches the calling thread into a side's namespace.
func (l *Lab) enter(side Side) error {
	l.nsMu.RLock()
	defer l.nsMu.RUnlock()
	f := l.nsFiles[side]
	if f == nil {
		return ErrClosed
	}
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns: %w", err)
	}
	return nil
}

// Close stops the box, waits for its goroutines, closes the TUN devices and
// deletes both namespaces. It may be called more than once.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		l.closeErr = l.teardown()
	})
	return l.closeErr
}

func (l *Lab) teardown() error {
	close(l.done)
	var errs []error
	for i, t := range l.tuns {
		if t != nil {
			if err := t.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close tun: %w", err))
			}
			l.tuns[i] = nil
		}
	}
	l.wg.Wait()
	l.nsMu.Lock()
	for i, f := range l.nsFiles {
		if f != nil {
			f.Close()
			l.nsFiles[i] = nil
		}
	}
	l.nsMu.Unlock()
	// Teardown must not be cut short by an expired setup context.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ns := range l.ns {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			if err := l.run(ctx, "netns", "del", ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	l.log.Debug("lab down")
	return errors.Join(errs...)
}
