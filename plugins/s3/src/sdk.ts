import type { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import type { Upload } from '@aws-sdk/lib-storage';

/** The parts of the AWS SDK the connector uses. */
export interface AwsSdk {
  S3Client: typeof S3Client;
  ListObjectsV2Command: typeof ListObjectsV2Command;
  GetObjectCommand: typeof GetObjectCommand;
  STSClient: typeof STSClient;
  AssumeRoleCommand: typeof AssumeRoleCommand;
  Upload: typeof Upload;
}

let loading: Promise<AwsSdk> | undefined;

/**
 * The AWS SDK, imported on first use. Importing it takes about 0.3 s and 25 MB here, which a
 * server that registers this plugin but never opens an S3 connector should not pay at every
 * start.
 */
export function awsSdk(): Promise<AwsSdk> {
  loading ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/client-sts'), import('@aws-sdk/lib-storage')]).then(([s3, sts, storage]) => ({
    S3Client: s3.S3Client,
    ListObjectsV2Command: s3.ListObjectsV2Command,
    GetObjectCommand: s3.GetObjectCommand,
    STSClient: sts.STSClient,
    AssumeRoleCommand: sts.AssumeRoleCommand,
    Upload: storage.Upload,
  }));
  return loading;
}
