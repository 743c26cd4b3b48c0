package turbotunnel

import "sync"

// bufferPool hands out byte slices of one size. It keeps them in a
// sync.Pool (so the garbage collector may reclaim idle buffers) and allocates
// nothing in steady state: a []byte stored in an interface would be boxed on
// every Put, so buffers travel in reusable *[]byte boxes, and empty boxes go
// back to a second pool.
type bufferPool struct {
	size  int
	bufs  sync.Pool // of *[]byte holding a buffer with size <= cap <= 2*size
	boxes sync.Pool // of empty *[]byte
}

func newBufferPool(size int) *bufferPool {
	return &bufferPool{size: size}
}

// get returns a buffer of length size.
func (bp *bufferPool) get() []byte {
	if box, ok := bp.bufs.Get().(*[]byte); ok {
		b := *box
		*box = nil
		bp.boxes.Put(box)
		return b[:bp.size]
	}
	return make([]byte, bp.size)
}

// put gives b back to the pool if its capacity is at least size and at most
// twice that (a larger buffer would pin more memory than the pool needs);
// other slices are left to the garbage collector.
func (bp *bufferPool) put(b []byte) {
	if cap(b) < bp.size || cap(b) > 2*bp.size {
		return
	}
	box, ok := bp.boxes.Get().(*[]byte)
	if !ok {
		box = new([]byte)
	}
	*box = b[:bp.size]
	bp.bufs.Put(box)
}
