import { activationTime } from '../../src/sandbox';
import { requestTarget } from '../../src/sandbox/webhook-sender';

describe('sandbox units', () => {
  test('the request target is the URL as written, fragment removed', () => {
    expect(requestTarget('http://127.0.0.1:1/a/./b/../h%2Fx=?hash=a%2Bb%3D&z')).toEqual({
      origin: 'http://127.0.0.1:1',
      path: '/a/./b/../h%2Fx=?hash=a%2Bb%3D&z',
    });
    expect(requestTarget('https://m.example')).toEqual({ origin: 'https://m.example', path: '/' });
    expect(requestTarget('https://m.example?hash=1#frag')).toEqual({ origin: 'https://m.example', path: '/?hash=1' });
    // Not a valid request target as written (a space): the WHATWG-normalised form is sent instead.
    expect(requestTarget('https://m.example/a b')).toEqual({ origin: 'https://m.example', path: '/a%20b' });
  });

  test('activation: the start of the next full UTC hour, strictly after enabling', () => {
    const at = (h: number, m: number, s = 0, ms = 0) => Date.UTC(2030, 0, 1, h, m, s, ms);
    expect(activationTime(at(10, 31), 'next-full-hour')).toBe(at(11, 0));
    expect(activationTime(at(10, 59, 59, 999), 'next-full-hour')).toBe(at(11, 0));
    expect(activationTime(at(10, 0), 'next-full-hour')).toBe(at(11, 0));
    expect(activationTime(at(23, 31), 'next-full-hour')).toBe(Date.UTC(2030, 0, 2, 0, 0));
    expect(activationTime(at(10, 31), 'immediate')).toBe(at(10, 31));
  });
});
