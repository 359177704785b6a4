import { describe, expect, it } from 'vitest';

import { bufferedBodyOf, bufferedResponse } from './buffered-response.ts';

describe('bufferedResponse()', () => {
  it('is a Response to every reader: status, headers, json(), text(), clone()', async () => {
    const response = bufferedResponse('{"a":1}', {
      status: 202,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(response).toBeInstanceOf(Response);
    expect(response.status).toBe(202);
    expect(response.ok).toBe(true);
    expect(response.headers.get('content-type')).toBe('application/json');
    const copy = response.clone();
    expect(await response.json()).toEqual({ a: 1 });
    expect(response.bodyUsed).toBe(true);
    expect(await copy.text()).toBe('{"a":1}');
  });

  it('hands its bytes to an adapter until something turns them into a stream', async () => {
    const response = bufferedResponse('héllo');
    expect(new TextDecoder().decode(bufferedBodyOf(response) ?? undefined)).toBe('héllo');
    expect(response.headers.get('content-type')).toBe('text/plain;charset=UTF-8');
    const reader = response.body?.getReader();
    expect(bufferedBodyOf(response)).toBeUndefined();
    expect(new TextDecoder().decode((await reader?.read())?.value)).toBe('héllo');
    expect(bufferedBodyOf(new Response('x'))).toBeUndefined();
    expect(bufferedBodyOf(bufferedResponse(null, { status: 204 }))).toBeNull();
  });

  it('keeps header changes made before and after the body is read', async () => {
    const response = bufferedResponse('x', { headers: { 'X-One': '1' } });
    response.headers.set('X-Two', '2');
    expect(await response.text()).toBe('x');
    response.headers.set('X-Three', '3');
    expect(Object.fromEntries(response.headers)).toMatchObject({
      'x-one': '1',
      'x-two': '2',
      'x-three': '3',
    });
  });

  it('refuses a status the platform would refuse', () => {
    expect(() => bufferedResponse(null, { status: 99 })).toThrow(RangeError);
    expect(() => bufferedResponse(null, { status: 600 })).toThrow(RangeError);
  });
});
