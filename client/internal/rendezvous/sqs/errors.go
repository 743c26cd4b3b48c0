package sqs

import "errors"

// ErrQueueURL is returned by New for a queue URL that is not an SQS queue
// URL (https://sqs.<region>.amazonaws.com/..., or any absolute http(s) URL
// when Config.Endpoint is set).
var ErrQueueURL = errors.New("invalid SQS queue URL")

// ErrCredentials is returned by New when Config.Credentials is not a valid
// sqscreds value.
var ErrCredentials = errors.New("invalid SQS credentials")

// ErrEndpoint is returned by New for an Endpoint that is not an absolute
// http(s) URL.
var ErrEndpoint = errors.New("invalid SQS endpoint")

// ErrNoAnswer is returned by Exchange when the broker's reply did not
// arrive in time (Snowflake returns an empty answer instead).
var ErrNoAnswer = errors.New("no answer from the broker through SQS")

// ErrResponseTooLarge is returned by Exchange when the reply is longer than
// MaxResponseSize.
var ErrResponseTooLarge = errors.New("SQS broker response too large")

// ErrRequestTooLarge is returned by Exchange for a poll request longer
// than MaxRequestSize.
var ErrRequestTooLarge = errors.New("poll request too large for SQS")
