// Package sqs gives a client SQS rendezvous (Snowflake's sqsqueue= and
// sqscreds= bridge-line options): set client.Config.NewSQSRendezvous to
// New. It is a package of its own so that only the programs that offer SQS
// link the AWS SDK; package client does not.
package sqs

import (
	"github.com/flurrypt/flurry/client"
	sqsrendezvous "github.com/flurrypt/flurry/client/internal/rendezvous/sqs"
)

// New checks cfg's queue URL and credentials and returns the SQS
// rendezvous; it makes no request.
func New(cfg client.SQSConfig) (client.Rendezvous, error) {
	r, err := sqsrendezvous.New(sqsrendezvous.Config{
		QueueURL:    cfg.QueueURL,
		Credentials: cfg.Credentials,
		Transport:   cfg.Transport,
		Timeout:     cfg.Timeout,
		Logger:      cfg.Logger,
	})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return r, nil
}
