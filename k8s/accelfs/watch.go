package accelfs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// fdWatch waits on node.json the way docs/tree.md's "Waiting for a change"
// says (and tools/accel-wait does): read the file, poll() for POLLPRI, read
// it again from offset 0. inotify sees nothing on FUSE; poll does.
//
// One poll() waits for the file and for the caller's context at once: a
// cancelled context writes wake, an eventfd beside the file's descriptor.
// Without it the poll would have to wake every so often to look at the
// context, and every poll() on a FUSE file is a request to the daemon.
type fdWatch struct {
	path string
	fd   int
	wake int
}

func openWatch(path string) (*fdWatch, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: eventfd: %w", path, err)
	}
	return &fdWatch{path: path, fd: fd, wake: wake}, nil
}

// Read reads the whole file from offset 0 through the watch's descriptor.
func (w *fdWatch) Read() (*Node, error) {
	buf := make([]byte, 0, 64<<10)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := unix.Pread(w.fd, buf[len(buf):cap(buf)], int64(len(buf)))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", w.path, err)
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return ParseNode(buf)
}

// Wait returns when the file changes (POLLPRI; an error or hang-up of the
// descriptor counts, so that the caller reads and finds out), when fallback
// has passed, or with the context's error once it is done.
func (w *fdWatch) Wait(ctx context.Context, fallback time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		one := [8]byte{1}
		unix.Write(w.wake, one[:])
		close(fired)
	})
	defer func() {
		if !stop() {
			// It ran (or runs): wait for its write and take it back, so
			// that the next Wait does not see this context's cancel.
			<-fired
			var count [8]byte
			unix.Read(w.wake, count[:])
		}
	}()
	deadline := time.Now().Add(fallback)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLPRI}, {Fd: int32(w.wake), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll %s: %w", w.path, err)
		}
		if n == 0 {
			continue
		}
		if fds[1].Revents&unix.POLLIN != 0 {
			return ctx.Err()
		}
		re := fds[0].Revents
		if re&unix.POLLNVAL != 0 {
			return errors.New("poll " + w.path + ": descriptor no longer valid")
		}
		if re&(unix.POLLPRI|unix.POLLERR|unix.POLLHUP) != 0 {
			return nil
		}
	}
}

func (w *fdWatch) Close() error {
	if w.fd < 0 {
		return nil
	}
	err := unix.Close(w.fd)
	unix.Close(w.wake)
	w.fd, w.wake = -1, -1
	return err
}
