import assert from 'node:assert/strict'
import { test } from 'node:test'
import { requestHash } from '../../src/http/resources/idempotency.js'

// A stored Idempotency-Key keeps its request's hash, compared as a string when the key is sent again:
// a retry that spans an upgrade must find the digest the earlier version wrote. These are the digests
// the routes wrote before they shared requestHash (plants, a batch, a stock movement, a reservation's
// two claims), each of its route's parts.

test('requestHash gives the digests stored before, for each route\'s parts', () => {
  assert.equal(requestHash({ name: 'Monstera', category: null }), 'mB0LG0JNLXTFeFpIde8nx2lEL0NFGDy21yvmeLG8Sok')
  assert.equal(requestHash(['batch', ['create', { name: 'Fern' }], ['delete', 7, null]]), 'yrAG-dRf_iYQv4t5zHm_vmhV363YALMYSJh96WpxfRg')
  assert.equal(requestHash(['stock', '12', { kind: 'sale', quantity: 2, location: 'main' }, '"3"']), '1s4sOXUiOZTplPoHaxdlFYK5pgoJ32gkeS9gM1Sop5s')
  assert.equal(requestHash(['reserve', { items: [{ plantId: '12', quantity: 1 }] }]), 'PTr_6fPM6byN-RPNDPyQC40_sR0xwjOFTrM7_NjkPa0')
  assert.equal(requestHash(['commit', '0b7e4c2a-5f0e-4d0a-9a57-2f1d7a0c9b11']), 't-gD9p5PG2-kVuYdeMUWJfc-9z4wCmtSNzBiGv49_m8')
})
