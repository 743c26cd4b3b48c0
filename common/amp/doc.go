// Package amp implements the AMP cache rendezvous encodings of Snowflake
// v2.14.1: how a client poll request travels in the path of a GET (an AMP
// cache forwards GETs only), how the broker's reply travels back as an AMP
// page (the only content an AMP cache serves), and how a publisher URL is
// rewritten into its AMP cache URL.
//
// # Request path (EncodePath, DecodePath)
//
// The client puts the whole encoded poll request ("1.0\n{json}") in the last
// path segment of GET <broker>/amp/client/<path>:
//
//	0 XXXXXXXXXXXX / base64url-nopad(request)
//	│ └─ 12 chars: base64url-nopad of 9 random bytes, a cache-buster
//	└─ format indicator '0'
//
// DecodePath checks the '0', then ignores everything up to and including the
// last '/': "0/YWJj", "0foobar/YWJj" and "0///YWJj" all decode to "abc".
//
// # Response armor (NewArmorEncoder, Armor, NewArmorDecoder)
//
// The broker's reply is a minimal valid AMP HTML page whose body holds the
// data in <pre> elements:
//
//	<!doctype html>                          ┐
//	<html amp>                               │ boilerplate: fixed bytes
//	...AMP script, canonical link, styles... │ (boilerplateStart)
//	<body>                                   ┘
//	<pre>
//	0eyJhbnN3ZXIiOiJ7XCJ0eXBlXCI6XCJhbnN      32 characters, then "\n"
//	3ZXJcIixcInNkcFwiOlwidj0wXFxyXFxu...      32 characters, then "\n"
//	...                                       at most 992 lines per <pre>
//	fQ==                                      last line may be shorter
//	</pre>
//	<pre>                                     next element, if more than 992 lines
//	...
//	</pre>
//	</body>                                  ┐ boilerplate end (no final newline)
//	</html>                                  ┘
//
// The text is '0' (the armor version) followed by the standard base64 (with
// '=' padding) of the data; the '0' counts toward the first 32-character
// line. 992 = (32768−1)/33 lines of 33 bytes keep every element under the
// 32 KiB a decoder buffers. A decoder tokenizes the HTML and concatenates
// the text inside <pre> elements (also inside other elements nested in a
// <pre>), dropping ASCII whitespace (tab, LF, FF, CR, space); text outside
// <pre> and comments are ignored. A nested <pre>, a stray </pre>, a missing
// </pre>, a text token over 32 KiB, a first character other than '0' and
// bad base64 are errors.
//
// # Cache URL (CacheURL)
//
// An AMP cache serves https://example.com/path at
//
//	https://<domain prefix of example.com>.<cache host>/c/s/example.com/path
//
// ("/c/example.com/path" for an http publisher). The domain prefix is the
// publisher's host decoded from Punycode, with "-" doubled and "." turned
// into "-" (example.com → example-com, foo-example.com →
// foo--example-com), wrapped as "0-…-0" if it has "--" at positions 3 and 4,
// and encoded back to Punycode; when that fails or is longer than 63
// characters (a DNS label), it is instead the 52-character lowercase
// unpadded base32 of the SHA-256 of the host.
package amp
