/**
 * @ferry/test-servers: real servers of the protocols Ferry's connectors speak, started on
 * loopback for tests: an embedded Postgres (or the one `DATABASE_URL` names), an S3 server, a
 * Snowflake emulator over that Postgres and librdkafka's mock Kafka cluster. Kept apart from
 * `@ferry/testing` because they bring platform binaries (Postgres) and servers a plugin author
 * who tests against their own infrastructure does not need.
 *
 * @packageDocumentation
 */
export { startTestPostgres, getSharedTestPostgres, type TestPostgres } from './embedded-postgres.js';
export { startTestS3, type TestS3Server } from './s3-server.js';
export { startTestSnowflake, type TestSnowflake, type TestSnowflakeOptions, type TestSnowflakeUser } from './snowflake-server.js';
export { startKafkaMock, RDKAFKA_MOCK_HEADER, type KafkaMock, type KafkaMockOptions } from './kafka-mock.js';
