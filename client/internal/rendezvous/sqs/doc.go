// Package sqs is the client side of SQS rendezvous (Snowflake v2.14.1's
// sqsqueue= and sqscreds= bridge-line options): the client's poll request
// travels to the broker through an Amazon SQS queue, and the broker's reply
// comes back through a queue of the client's own. It is the only client
// package that links the AWS SDK.
//
// # Exchange
//
//	client                                   SQS                              broker
//	  │ SendMessage(broker queue,             │                                  │
//	  │   body = "1.0\n{…}" poll request,     │                                  │
//	  │   attribute ClientID = 16 hex digits) │ ── ReceiveMessage (long poll) ─▶ │
//	  │                                       │ ◀── CreateQueue                  │
//	  │ GetQueueUrl("snowflake-client-<ID>")  │       ("snowflake-client-<ID>")  │
//	  │   every PollInterval until it exists  │                                  │ matches a proxy (≤ 5 s)
//	  │ ReceiveMessage(client queue,          │ ◀── SendMessage(client queue,    │
//	  │   long poll ≤ 10 s) until an answer   │       ClientPollResponse JSON)   │
//	  │ DeleteQueue(client queue)             │                                  │
//
// The ClientID is 8 random bytes in lowercase hex, fresh for every
// exchange; the message body is the encoded messages.ClientPollRequest
// unchanged and the reply is the broker's encoded messages.ClientPollResponse
// ({"answer":…} or {"error":…}), byte for byte what the HTTP method carries.
//
// # Differences from Snowflake
//
// Snowflake's client sleeps 1 s, tries GetQueueUrl up to 5 times a second
// apart, then ReceiveMessage up to 5 times (20 s long polls), and returns an
// empty answer if nothing came; it never deletes its queue (docs/design.md,
// weakness 24). Here the whole exchange is bounded by the caller's context
// and Config.Timeout (30 s by default) rather than by attempt counts,
// running out of time is ErrNoAnswer (never an empty answer), and the
// client queue is deleted afterwards on a best-effort basis: if the
// credentials may not delete queues, the broker's cleanup removes it two
// minutes later. Long polls last at most 10 s, since the client's broker
// transport gives up on response headers after 15 s. Requests go through
// Config.Transport (the client's broker transport, with its uTLS
// fingerprint if one is set), never through the environment's proxy
// settings, and the SDK reads no shared configuration files, environment
// variables or instance metadata: the region comes from the queue URL and
// the credentials from sqscreds only.
//
// # Queue URL and region
//
// The queue URL must be https://sqs.<region>.amazonaws.com/<account>/<name>;
// the region is the host's second label (Snowflake's check). With
// Config.Endpoint (a local SQS-compatible server, for tests) the URL may
// point anywhere and the region defaults to us-east-1.
package sqs
