package tunnelseal

import (
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
)

// Sizes of the wire format (see the package documentation).
const (
	// KeyLen is the length of an X25519 key.
	KeyLen = 32
	// NonceLen is the length of a carrier nonce N.
	NonceLen = 16
	// HeaderLen is the length of a join header.
	HeaderLen = turbotunnel.TokenLen + turbotunnel.TokenLen + KeyLen + 8 + NonceLen + Overhead
	// Overhead is what sealing adds to a packet: the AEAD tag.
	Overhead = chacha20poly1305.Overhead
)

// SealedToken opens a sealed carrier's join header. It is not Snowflake's
// turbotunnel token, which opens every other carrier.
var SealedToken = [turbotunnel.TokenLen]byte{0x66, 0x6c, 0x72, 0x79, 0x53, 0x45, 0x41, 0x4c} // "flrySEAL"

// Errors.
var (
	ErrBadKey    = errors.New("tunnelseal: bad key")
	ErrBadHeader = errors.New("tunnelseal: join header does not authenticate")
	ErrOpen      = errors.New("tunnelseal: packet does not authenticate")
	ErrExhausted = errors.New("tunnelseal: nonce counter exhausted")
)

const (
	infoSession  = "flurry tunnelseal v1 session"
	infoCarrier  = "flurry tunnelseal v1 carrier"
	labelID      = "flurry tunnelseal v1 client id"
	macEnd       = HeaderLen - Overhead
	offsetID     = turbotunnel.TokenLen
	offsetEph    = offsetID + turbotunnel.TokenLen
	offsetJoin   = offsetEph + KeyLen
	offsetNonce  = offsetJoin + 8
	keyFileLabel = "flurry relay key (X25519 private, base64)"
)

// PrivateKey is a relay's long-term X25519 private key.
type PrivateKey [KeyLen]byte

// PublicKey is an X25519 public key: the relay's, published in the bridge
// line as relay-key.
type PublicKey [KeyLen]byte

// GenerateKey returns a fresh relay key pair.
func GenerateKey() (PrivateKey, error) {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return PrivateKey{}, err
	}
	return PrivateKey(k.Bytes()), nil
}

// Public returns the public key of k.
func (k PrivateKey) Public() (PublicKey, error) {
	priv, err := ecdh.X25519().NewPrivateKey(k[:])
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	return PublicKey(priv.PublicKey().Bytes()), nil
}

// String is the key's bridge-line form: standard base64 without padding.
func (k PublicKey) String() string { return base64.RawStdEncoding.EncodeToString(k[:]) }

// ParsePublicKey parses a relay-key bridge-line value: standard or URL-safe
// base64 of 32 bytes, padded or not.
func ParsePublicKey(s string) (PublicKey, error) {
	var k PublicKey
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.RawURLEncoding.DecodeString(s)
	}
	if err != nil || len(b) != KeyLen {
		return k, fmt.Errorf("%w: relay-key is not 32 bytes of base64", ErrBadKey)
	}
	copy(k[:], b)
	if _, err := ecdh.X25519().NewPublicKey(k[:]); err != nil {
		return k, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	return k, nil
}

// LoadOrCreateKeyFile reads a relay's private key from path, or, if path
// does not exist, creates it (mode 0600, its directory 0700 if missing)
// with a fresh key. The file holds one line of standard base64.
func LoadOrCreateKeyFile(path string) (PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		k, err := GenerateKey()
		if err != nil {
			return k, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return k, fmt.Errorf("create relay key: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return k, fmt.Errorf("create relay key: %w", err)
		}
		_, err = fmt.Fprintf(f, "%s\n", base64.StdEncoding.EncodeToString(k[:]))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return k, fmt.Errorf("write relay key: %w", err)
		}
		return k, nil
	}
	if err != nil {
		return PrivateKey{}, fmt.Errorf("read relay key: %w", err)
	}
	var k PrivateKey
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(raw) != KeyLen {
		return k, fmt.Errorf("%w: %s is not a %s", ErrBadKey, path, keyFileLabel)
	}
	copy(k[:], raw)
	if _, err := k.Public(); err != nil {
		return k, err
	}
	return k, nil
}

// clientIDOf returns the ClientID bound to an ephemeral public key.
func clientIDOf(eph []byte) turbotunnel.ClientID {
	h := sha256.New()
	h.Write([]byte(labelID))
	h.Write(eph)
	var sum [sha256.Size]byte
	var id turbotunnel.ClientID
	copy(id[:], h.Sum(sum[:0]))
	return id
}

func sessionKey(shared, eph, relay []byte) ([]byte, error) {
	salt := make([]byte, 0, 2*KeyLen)
	salt = append(append(salt, eph...), relay...)
	return hkdf.Key(sha256.New, shared, salt, infoSession, KeyLen)
}

// carrierStreams derives the two directions of one carrier.
func carrierStreams(k, nonce []byte, join uint64) (c2r, r2c *Stream, err error) {
	info := make([]byte, 0, len(infoCarrier)+8)
	info = binary.BigEndian.AppendUint64(append(info, infoCarrier...), join)
	keys, err := hkdf.Key(sha256.New, k, nonce, string(info), 2*chacha20poly1305.KeySize)
	if err != nil {
		return nil, nil, err
	}
	a, err := chacha20poly1305.New(keys[:chacha20poly1305.KeySize])
	if err != nil {
		return nil, nil, err
	}
	b, err := chacha20poly1305.New(keys[chacha20poly1305.KeySize:])
	if err != nil {
		return nil, nil, err
	}
	return &Stream{aead: a}, &Stream{aead: b}, nil
}

// Client is the client side of one sealed session.
type Client struct {
	id   turbotunnel.ClientID
	eph  [KeyLen]byte
	key  []byte
	join atomic.Uint64
}

// NewClient starts a sealed session with the relay whose public key is
// relay: a fresh ephemeral key and the ClientID bound to it.
func NewClient(relay PublicKey) (*Client, error) {
	rk, err := ecdh.X25519().NewPublicKey(relay[:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	e, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	shared, err := e.ECDH(rk)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	c := &Client{}
	copy(c.eph[:], e.PublicKey().Bytes())
	if c.key, err = sessionKey(shared, c.eph[:], relay[:]); err != nil {
		return nil, err
	}
	c.id = clientIDOf(c.eph[:])
	return c, nil
}

// ClientID is the session's ClientID.
func (c *Client) ClientID() turbotunnel.ClientID { return c.id }

// Join returns the join header of the session's next carrier and the
// carrier's two directions: send (client to relay) and recv.
func (c *Client) Join() (hdr [HeaderLen]byte, send, recv *Stream, err error) {
	j := c.join.Add(1)
	copy(hdr[:], SealedToken[:])
	copy(hdr[offsetID:], c.id[:])
	copy(hdr[offsetEph:], c.eph[:])
	binary.BigEndian.PutUint64(hdr[offsetJoin:], j)
	if _, err := rand.Read(hdr[offsetNonce:macEnd]); err != nil {
		return hdr, nil, nil, err
	}
	send, recv, err = carrierStreams(c.key, hdr[offsetNonce:macEnd], j)
	if err != nil {
		return hdr, nil, nil, err
	}
	// The tag: counter 0 of send, over the header.
	send.aead.Seal(hdr[macEnd:macEnd], send.next(), nil, hdr[:macEnd])
	return hdr, send, recv, nil
}

// Relay is the relay side: it checks join headers.
type Relay struct {
	priv *ecdh.PrivateKey
	pub  PublicKey
}

// NewRelay returns the relay side for key.
func NewRelay(key PrivateKey) (*Relay, error) {
	priv, err := ecdh.X25519().NewPrivateKey(key[:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	return &Relay{priv: priv, pub: PublicKey(priv.PublicKey().Bytes())}, nil
}

// PublicKey is the relay's public key, for the bridge line.
func (r *Relay) PublicKey() PublicKey { return r.pub }

// Joined is an accepted join header.
type Joined struct {
	ID   turbotunnel.ClientID
	Join uint64  // the carrier's join number J
	Recv *Stream // client to relay
	Send *Stream // relay to client
}

// Accept checks a join header (which starts with SealedToken) and returns
// the carrier's ClientID, join number and directions. The caller still
// has to refuse a join number already seen for the session (JoinWindow).
func (r *Relay) Accept(hdr *[HeaderLen]byte) (Joined, error) {
	var j Joined
	if subtle.ConstantTimeCompare(hdr[:turbotunnel.TokenLen], SealedToken[:]) != 1 {
		return j, ErrBadHeader
	}
	eph := hdr[offsetEph:offsetJoin]
	copy(j.ID[:], hdr[offsetID:offsetEph])
	if want := clientIDOf(eph); subtle.ConstantTimeCompare(want[:], j.ID[:]) != 1 {
		return j, ErrBadHeader
	}
	ek, err := ecdh.X25519().NewPublicKey(eph)
	if err != nil {
		return j, ErrBadHeader
	}
	shared, err := r.priv.ECDH(ek)
	if err != nil {
		return j, ErrBadHeader // a low-order point
	}
	k, err := sessionKey(shared, eph, r.pub[:])
	if err != nil {
		return j, err
	}
	j.Join = binary.BigEndian.Uint64(hdr[offsetJoin:])
	recv, send, err := carrierStreams(k, hdr[offsetNonce:macEnd], j.Join)
	if err != nil {
		return j, err
	}
	if _, err := recv.aead.Open(nil, recv.next(), hdr[macEnd:], hdr[:macEnd]); err != nil {
		return j, ErrBadHeader
	}
	j.Recv, j.Send = recv, send
	return j, nil
}

// Stream is one direction of a sealed carrier: its key and its counter.
// It is not safe for concurrent use (each direction has one reader or one
// writer).
type Stream struct {
	aead  cipher.AEAD
	ctr   uint64
	nonce [chacha20poly1305.NonceSize]byte
}

func (s *Stream) next() []byte {
	binary.BigEndian.PutUint64(s.nonce[4:], s.ctr)
	s.ctr++
	return s.nonce[:]
}

// AppendChunk appends to dst the encapsulation data chunk that carries p
// sealed (len(p)+Overhead bytes of data). With room in dst it allocates
// nothing.
func (s *Stream) AppendChunk(dst, p []byte) ([]byte, error) {
	if s.ctr == math.MaxUint64 {
		return dst, ErrExhausted
	}
	out, err := encapsulation.AppendDataPrefix(dst, len(p)+Overhead)
	if err != nil {
		return dst, err
	}
	return s.aead.Seal(out, s.next(), p, nil), nil
}

// Open opens the sealed packet c in place and returns the packet (c's
// first len(c)-Overhead bytes). Any failure is final for the carrier: the
// counter has moved on.
func (s *Stream) Open(c []byte) ([]byte, error) {
	if s.ctr == math.MaxUint64 {
		return nil, ErrExhausted
	}
	p, err := s.aead.Open(c[:0], s.next(), c, nil)
	if err != nil {
		return nil, ErrOpen
	}
	return p, nil
}

// JoinWindow remembers the join numbers a session has accepted: the
// highest, and which of the 64 below it. Its zero value has seen none.
type JoinWindow struct {
	max  uint64
	seen uint64 // bit i: max-i was seen
}

// Accept records j and reports whether it is new: not seen before, and not
// 64 or more below the highest seen. Join numbers start at 1.
func (w *JoinWindow) Accept(j uint64) bool {
	switch {
	case j == 0:
		return false
	case j > w.max:
		shift := j - w.max
		if shift >= 64 {
			w.seen = 0
		} else {
			w.seen <<= shift
		}
		w.seen |= 1
		w.max = j
		return true
	case w.max-j >= 64:
		return false
	default:
		bit := uint64(1) << (w.max - j)
		if w.seen&bit != 0 {
			return false
		}
		w.seen |= bit
		return true
	}
}
