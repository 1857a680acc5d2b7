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
type fdWatch struct {
	path string
	fd   int
}

func openWatch(path string) (*fdWatch, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &fdWatch{path: path, fd: fd}, nil
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

// pollSlice bounds one poll() so that a cancelled context is seen.
const pollSlice = 500 * time.Millisecond

func (w *fdWatch) Wait(ctx context.Context, fallback time.Duration) error {
	deadline := time.Now().Add(fallback)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLPRI}}
		n, err := unix.Poll(fds, int(min(left, pollSlice)/time.Millisecond)+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll %s: %w", w.path, err)
		}
		if n == 0 {
			continue
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
	w.fd = -1
	return err
}
