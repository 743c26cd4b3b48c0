// Package role lists Flurry's roles as the release packages them: each
// binary's name and descriptions, which roles run as services and which
// have a container image, and the copyright file every artifact carries.
package role
