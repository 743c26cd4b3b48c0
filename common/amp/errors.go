package amp

import "errors"

// Path errors, returned by DecodePath. The texts match Snowflake's.
var (
	// ErrMissingFormat: the path is empty.
	ErrMissingFormat = errors.New("missing format indicator")
	// ErrUnknownFormat: the path does not start with '0' (the error
	// text ends with the quoted byte, as Snowflake's does).
	ErrUnknownFormat = errors.New("unknown format indicator")
	// ErrMissingData: the path has no '/' after the format indicator.
	ErrMissingData = errors.New("missing data")
	// ErrPathData: the data after the last '/' is not base64url without
	// padding.
	ErrPathData = errors.New("invalid base64 data in path")
)

// Armor errors, returned by NewArmorDecoder or its Read.
var (
	// ErrArmor: the page is not valid armor: a nested or stray <pre>, a
	// missing </pre>, an over-long text token, no text in <pre> elements,
	// or bad base64.
	ErrArmor = errors.New("invalid AMP armor")
	// ErrArmorVersion: the first character of the armored text is not
	// '0' (the error text ends with the quoted byte).
	ErrArmorVersion = errors.New("unknown armor version indicator")
)

// Cache URL errors, returned by CacheURL.
var (
	// ErrPublisherURL: the publisher URL is not http or https, has no
	// host, has user information, or a port other than the scheme's
	// default.
	ErrPublisherURL = errors.New("invalid publisher URL")
	// ErrCacheURL: the cache URL has a query or a fragment.
	ErrCacheURL = errors.New("invalid AMP cache URL")
	// ErrContentType: the content type is empty.
	ErrContentType = errors.New("invalid content type")
)
