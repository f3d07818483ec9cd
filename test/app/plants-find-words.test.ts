import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { searchText, startTokens, wordStarts } from '../../src/catalogue/search-key.js'
import { ftsMatch } from '../../src/store/sqlite/list-query.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// q's short terms (1–2 characters) match the start of a word: a run of letters and digits, so a
// word starts at the name's start and after any other character (search-key.ts).

const names = async (api: TestApp, query: string): Promise<string[]> => {
  const res = await api.request({ method: 'GET', url: `/v3/plant?${query}` })
  assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
  return res.json().items.map((p: { name: string }) => p.name)
}

test('word starts: after anything not a letter or digit, accents folded; the index text marks them apart from the name', () => {
  assert.deepEqual(wordStarts('ficus, 21 cm pot'), ['fi', '21', 'cm', 'po'])
  assert.deepEqual(wordStarts('zz'), ['zz'])
  assert.deepEqual(wordStarts('a-b#4'), ['a-', 'b#', '4'])
  assert.deepEqual(startTokens('ZZ Plänt'.toLowerCase()), ['z', 'zz', 'p', 'pl'])
  // No trigram of the marked starts is a trigram a long term could hold: each has a control character.
  const text = searchText('zz plant')
  assert.ok(text.startsWith('zz plant '))
  const tail = [...text.slice('zz plant '.length)]
  for (let i = 0; i + 3 <= tail.length; i++) assert.match(tail.slice(i, i + 3).join(''), /\p{Cc}/u)
  // A short term is one trigram of the index; a periodic long term takes its every distinct trigram.
  assert.equal(ftsMatch(['zz']), '"\u0001zz"')
  assert.equal(ftsMatch(['z']), '"\u0002\u0002z"')
  assert.equal(ftsMatch(['potpotpot']), '"pot" AND "otp" AND "tpo"')
})

for (const engine of ENGINES) {
  describe(`q's short terms on ${engine.name}`, { skip: engine.skip }, () => {
    test('1–2 characters match the start of a word: "zz" finds "ZZ plant", "21 cm" finds "Ficus, 21 cm pot", never a word\'s middle', async (t) => {
      const api = await build(t, engine)
      for (const name of ['ZZ plant', 'Ficus, 21 cm pot', 'Pizza palm', 'Fern 121cm', 'Été fern', 'X', 'a-b', '(Rare) aloe']) await api.add({ name })
      assert.deepEqual(await names(api, 'q=zz'), ['ZZ plant'])
      assert.deepEqual(await names(api, 'q=21%20cm'), ['Ficus, 21 cm pot'])
      assert.deepEqual(await names(api, 'q=21'), ['Ficus, 21 cm pot'])
      assert.deepEqual(await names(api, 'q=p'), ['ZZ plant', 'Ficus, 21 cm pot', 'Pizza palm'])
      assert.deepEqual(await names(api, 'q=PA'), ['Pizza palm'])
      assert.deepEqual(await names(api, 'q=e'), ['Été fern'])
      assert.deepEqual(await names(api, 'q=%C3%89T'), ['Été fern'])
      assert.deepEqual(await names(api, 'q=x'), ['X'])
      assert.deepEqual(await names(api, 'q=b'), ['a-b'])
      assert.deepEqual(await names(api, 'q=a-'), ['a-b'])
      assert.deepEqual(await names(api, 'q=('), ['(Rare) aloe'])
      assert.deepEqual(await names(api, 'q=ra'), ['(Rare) aloe'])
      // Long terms still match anywhere; short and long together.
      assert.deepEqual(await names(api, 'q=izz'), ['Pizza palm'])
      assert.deepEqual(await names(api, 'q=f%20121'), ['Fern 121cm'])
      assert.deepEqual(await names(api, 'q=cm'), ['Ficus, 21 cm pot'])
      assert.deepEqual(await names(api, 'q=p&sort=-name&limit=2'), ['ZZ plant', 'Pizza palm'])
    })
  })
}
