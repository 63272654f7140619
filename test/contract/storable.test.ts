import { describe, expect, it } from 'vitest'
import { storable, storableText } from '../../contract/storable'

describe('storableText', () => {
  it('removes NUL and replaces a lone surrogate, high or low, by U+FFFD', () => {
    expect(storableText('a\u0000b')).toBe('ab')
    expect(storableText('a\ud800b')).toBe('a\ufffdb')
    expect(storableText('a\udc00b')).toBe('a\ufffdb')
    expect(storableText('end\ud83d')).toBe('end\ufffd')
    expect(storableText('\udc00\ud800')).toBe('\ufffd\ufffd')
  })

  it('keeps every pair, other controls and ordinary text as they are', () => {
    const text = 'tab\there \ud83d\ude00 \u0001 ü'
    expect(storableText(text)).toBe(text)
  })
})

describe('storable', () => {
  it('cleans strings and object keys at any depth, leaves other values and the input alone', () => {
    const input = { 'k\u0000': ['v\ud800', { n: 1, b: true, z: null }] }
    expect(storable(input)).toEqual({ k: ['v\ufffd', { n: 1, b: true, z: null }] })
    expect(input).toEqual({ 'k\u0000': ['v\ud800', { n: 1, b: true, z: null }] })
  })
})
