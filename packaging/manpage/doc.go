// Package manpage makes a command's manual page from its -h text, so that
// the two cannot drift apart: the release runs each binary with -h and
// turns the text into roff (the man(7) macros), keeping its structure: the
// usage line becomes the SYNOPSIS, the flag list OPTIONS, one-word headings
// ("Environment:") sections, indented lines examples, and the rest
// paragraphs.
package manpage
