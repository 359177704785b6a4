import type { NewDocument } from '@disarm/protocol';

/** A one-byte raw-lane document of `org_a`, as the tests of this package accept it. */
export function rawDocument(id: string, intakeKey = `intake/${id}`): NewDocument {
  return {
    id,
    organisationId: 'org_a',
    lane: 'raw',
    fileName: 'a.pdf',
    sizeBytes: 1,
    intakeKey,
    deleteAfterDownload: false,
    statusStyle202: false,
  };
}
