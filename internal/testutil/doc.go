// Package testutil holds the helpers that tests of several packages and
// the benchmark drivers share: a real redis-server on a free loopback port
// (LaunchRedis, a handle the bench drivers stop themselves; StartRedis, the
// same stopped at the end of a test), a real Redis Cluster of such servers
// (LaunchRedisCluster; StartRedisCluster, with slot migration, failover and
// restarts for tests), an in-process Kafka (StartKafka), polling waits
// (Poll; WaitFor and WaitUntil for tests) and small renderers for golden
// transcripts. Production code never imports it, and it fakes nothing: a
// missing redis-server or redis-cli fails the test.
package testutil
