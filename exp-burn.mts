import { phonePictures } from './bench/photos.ts'
import { processImage } from './src/photos/images.ts'
const pics = await phonePictures(4)
console.error('ready')
const end = Date.now() + Number(process.argv[2]) * 1000
let n = 0
while (Date.now() < end) { await processImage(pics[n++ % 4], 'image/jpeg') }
console.error('pictures', n)
