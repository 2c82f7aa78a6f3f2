import json,sys
nb=json.load(open(sys.argv[1]))
for i,c in enumerate(nb['cells']):
    if c['cell_type']!='code': continue
    print(f"=== [{i}] {c.get('id')}")
    for o in c.get('outputs',[]):
        if o.get('output_type')=='stream': print(''.join(o['text'])[:3000])
        elif 'data' in o:
            d=o['data']
            if 'text/plain' in d and 'image/png' not in d: print(''.join(d['text/plain'])[:3000])
            elif 'image/png' in d: print('<image>')
        elif o.get('output_type')=='error': print('ERROR', o.get('ename'), o.get('evalue'))
