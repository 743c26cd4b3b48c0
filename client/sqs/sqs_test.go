package sqs_test

import (
	"testing"

	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/client/sqs"
)

// {"aws-access-key-id":"AKIDEXAMPLE","aws-secret-key":"secret"}
const creds = "eyJhd3MtYWNjZXNzLWtleS1pZCI6IkFLSURFWEFNUExFIiwiYXdzLXNlY3JldC1rZXkiOiJzZWNyZXQifQ=="

// TestNew: a valid queue builds a rendezvous without a request; an invalid
// one fails with a nil Rendezvous, not a typed nil inside the interface.
func TestNew(t *testing.T) {
	r, err := sqs.New(client.SQSConfig{QueueURL: "https://sqs.us-east-1.amazonaws.com/893902434899/snowflake-broker", Credentials: creds})
	if err != nil || r == nil {
		t.Fatalf("New = %v, %v", r, err)
	}
	r, err = sqs.New(client.SQSConfig{QueueURL: "https://queue.test/1/q", Credentials: creds})
	if err == nil || r != nil {
		t.Fatalf("New with a queue outside SQS = %v, %v; want nil and an error", r, err)
	}
	if _, err := sqs.New(client.SQSConfig{QueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", Credentials: "e30="}); err == nil {
		t.Fatal("New with empty credentials succeeded")
	}
}
