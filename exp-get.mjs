import autocannon from 'autocannon'
const insts = Array.from({length: 10}, () => autocannon({url:'http://127.0.0.1:8099', connections:1, duration:5, requests: Array.from({length:1024}, () => ({method:'GET', path: `/v3/plant/${1+Math.floor(Math.random()*40)}`}))}))
const times = []
for (const i of insts) i.on('response', (_c, s, _b, ms) => times.push(ms))
const rs = await Promise.all(insts)
times.sort((a,b)=>a-b)
console.log(process.argv[2], rs.reduce((n,r)=>n+r['2xx']/r.duration,0).toFixed(0), 'req/s p99', times[Math.floor(times.length*0.99)].toFixed(3))
