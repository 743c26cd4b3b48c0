// Package servercmd is what every Flurry server command does the same way at
// start-up: the TLS choice (ACME, certificate files or none) behind one set
// of flags named as Snowflake's (-acme-hostnames, -acme-email,
// -acme-cert-cache, -cert, -key, -disable-tls), the ACME HTTP-01 challenge
// listener, and the logger that scrubs IP addresses. The role libraries
// never import it: they take a *tls.Config and a *slog.Logger.
package servercmd
