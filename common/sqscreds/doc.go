// Package sqscreds encodes and decodes the AWS credentials that a client
// carries in its bridge line for SQS rendezvous (the sqscreds= option of
// Snowflake v2.14.1).
//
// # Format
//
// The value is standard base64 (RFC 4648 section 4, with '=' padding) of a
// JSON object with two string members:
//
//	{"aws-access-key-id":"AKIA…","aws-secret-key":"…"}
//	        │
//	        └─ base64 ─▶ eyJhd3MtYWNjZXNzLWtleS1pZCI6IkFLSUEuLi4iLCJhd3Mtc2VjcmV0LWtleSI6Ii4uLiJ9
//
// Encode writes exactly what Snowflake's generator writes (the two members
// in this order, no spaces, padded base64). Decode accepts Snowflake's
// values and, in addition, base64 without padding (padding is easily lost
// when a value is copied around); it refuses values longer than MaxEncodedLen,
// anything that is not a JSON object, and empty keys. Unknown JSON members
// are ignored, as in Snowflake.
//
// # Making credentials
//
// These credentials are published in bridge lines, so they must belong to
// an IAM user that can do nothing but rendezvous: send messages to the
// broker's queue, and GetQueueUrl, ReceiveMessage and DeleteQueue on queues
// named snowflake-client-*. Encode the user's access key with
//
//	v, err := sqscreds.Credentials{AccessKeyID: id, SecretKey: secret}.Encode()
//
// (Snowflake ships a generator command for this; Flurry keeps it a library
// call).
package sqscreds
